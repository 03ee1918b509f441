// Command rdmacm-pd dissects RDMA connection setup and its RPC-over-RDMA
// private data. See README.md.
package main

import (
	"os"

	"github.com/rdmacm-pd/rdmacm-pd/cmd"
)

func main() { os.Exit(cmd.Main()) }
