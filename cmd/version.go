package cmd

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
)

// Version is the tool's version, set at build time with
// -ldflags "-X github.com/rdmacm-pd/rdmacm-pd/cmd.Version=v1.2.3"; when it
// is empty, the build information says (the module version of a go
// install module@version, the VCS revision of a build in a clone).
var Version = ""

// BuildInfo is what identifies a build of the tool in a bug report.
type BuildInfo struct {
	Version  string // a release (module) version, or "" for a development build
	Revision string // the VCS revision, or ""
	Time     string // the revision's commit time (RFC 3339, UTC), or ""
	Modified bool   // the working tree had changes the revision lacks
	Go       string // the Go release it was built with
	Platform string // GOOS/GOARCH
	Backend  string // live capture: AF_PACKET, libpcap or none
}

// pseudoVersion matches a Go pseudo-version (v0.0.0-20260101000000-abcdef123456),
// which the go command derives from a revision: the revision itself says more.
var pseudoVersion = regexp.MustCompile(`-(0\.)?\d{14}-[0-9a-f]{12}(\+dirty)?$`)

// ReadBuildInfo reads the build information the go command stamped into
// the binary.
func ReadBuildInfo() BuildInfo {
	b := BuildInfo{Version: Version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Backend: capture.Backend}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if b.Version == "" {
		if v := bi.Main.Version; v != "" && v != "(devel)" && !pseudoVersion.MatchString(v) {
			b.Version = strings.TrimSuffix(v, "+dirty")
		}
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
				b.Time = t.UTC().Format(time.RFC3339)
			} else {
				b.Time = s.Value
			}
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the one line that identifies the build, as `rdmacm-pd
// version` prints it and the Markdown report and the JSON summary carry
// it: "rdmacm-pd v1.2.0 (3f2a9c1d0b4e, 2026-01-02T03:04:05Z) go1.25.4
// linux/amd64 AF_PACKET"; a development build shows "devel" for the
// version, a revision with uncommitted changes "+dirty".
func (b BuildInfo) String() string {
	v := b.Version
	if v == "" {
		v = "devel"
	}
	var rev []string
	if b.Revision != "" {
		r := b.Revision
		if len(r) > 12 {
			r = r[:12]
		}
		if b.Modified {
			r += "+dirty"
		}
		rev = append(rev, r)
	}
	if b.Time != "" {
		rev = append(rev, b.Time)
	}
	s := "rdmacm-pd " + v
	if len(rev) > 0 {
		s += " (" + strings.Join(rev, ", ") + ")"
	}
	return fmt.Sprintf("%s %s %s %s", s, b.Go, b.Platform, b.Backend)
}

// ToolVersion is the line that identifies this build.
func ToolVersion() string { return ReadBuildInfo().String() }

func newVersionCmd(s *IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the VCS revision, the Go release, the platform and the capture backend",
		Long: `Prints one line that identifies this build, for bug reports: the release
version (or "devel"), the VCS revision and its commit time (with +dirty when
the tree had uncommitted changes), the Go release, the platform, and the live
capture backend (AF_PACKET, or libpcap in a -tags pcap build). --version
prints the same. The Markdown report and the JSON summary ("tool") carry it.`,
		Example: `  rdmacm-pd version`,
		Args:    noArgs("version"),
		RunE: func(c *cobra.Command, args []string) error {
			_, err := fmt.Fprintln(s.Out, ToolVersion())
			return err
		},
	}
}
