//go:build darwin || freebsd || netbsd || openbsd

package pcapfile

// mapPopulate: no MAP_POPULATE here; the pages are touched instead.
const mapPopulate = 0
