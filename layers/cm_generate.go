//go:build ignore

// cm_generate writes the cm_*.go files of package layers from the CM message
// layouts in internal/cmgen. go generate runs it in this directory.
package main

import (
	"log"
	"os"

	"github.com/rdmacm-pd/rdmacm-pd/layers/internal/cmgen"
)

func main() {
	files, err := cmgen.Generate()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range files {
		if err := os.WriteFile(f.Name, f.Src, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
