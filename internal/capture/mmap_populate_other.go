//go:build darwin || freebsd || netbsd || openbsd

package capture

// mapPopulate: no MAP_POPULATE here; the pages are touched instead.
const mapPopulate = 0
