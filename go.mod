module github.com/rdmacm-pd/rdmacm-pd

go 1.25.0

require (
	github.com/fatih/color v1.19.0
	github.com/gopacket/gopacket v1.7.7
	github.com/mattn/go-isatty v0.0.20
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.9
	golang.org/x/net v0.55.0
	golang.org/x/sys v0.45.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
)
