// Package pcaps holds sample captures written by `rdmacm-pd craft`. They
// are regenerated with `go generate ./pcaps` and listed in README.md here;
// TestSamplesUpToDate checks that the files match what craft writes today.
package pcaps

//go:generate go run .. craft --remote-invalidate --send-size 4096 --receive-size 4096 --reply-send-size 4096 --reply-receive-size 4096 -w rocev2-nfs.pcap
//go:generate go run .. craft --ipv6 --remote-invalidate --reply-remote-invalidate --send-size 8192 --receive-size 8192 --reply-send-size 16384 --reply-receive-size 16384 -w rocev2-ipv6.pcapng
//go:generate go run .. craft --transport rocev1 --send-size 4096 --receive-size 4096 --reply-send-size 1024 --reply-receive-size 8192 -w rocev1.pcap
//go:generate go run .. craft --transport ib --remote-invalidate --reply-remote-invalidate -w infiniband.pcap
//go:generate go run .. craft --reject --remote-invalidate -w rocev2-reject.pcap
//go:generate go run .. craft --reply-no-rpcrdma --remote-invalidate -w rocev2-one-sided.pcap
//go:generate go run .. craft --transport iwarp --mpa-rev 1 --remote-invalidate -w iwarp-rev1.pcap
//go:generate go run .. craft --transport iwarp --mpa-rev 2 --remote-invalidate --reply-send-size 8192 --reply-receive-size 8192 -w iwarp-rev2.pcap
//go:generate go run .. craft --transport iwarp --mpa-rev 2 --ipv6 --split 7,30 --remote-invalidate -w iwarp-split-ipv6.pcapng
//go:generate go run .. craft --ulp nvme-rdma -w rocev2-nvme.pcap
//go:generate go run .. craft --ulp nvme-rdma --reject -w rocev2-nvme-reject.pcap
//go:generate go run .. craft --ulp iser --transport iwarp -w iwarp-iser.pcap
//go:generate go run .. craft --traffic --remote-invalidate --reply-remote-invalidate -w rocev2-nfs-traffic.pcap
//go:generate go run .. craft --transport iwarp --traffic --remote-invalidate --reply-remote-invalidate -w iwarp-nfs-traffic.pcap
