package capture

import "golang.org/x/sys/unix"

// mapPopulate asks mmap to fill a window's page tables at once (see
// mapping.mapWindows).
const mapPopulate = unix.MAP_POPULATE
