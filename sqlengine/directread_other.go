//go:build !linux

package sqlengine

import (
	"errors"
	"net"
)

// directReader is Linux-only; elsewhere every read uses Go's poller.
type directReader struct{}

func newDirectReader(net.Conn) *directReader { return nil }

func (*directReader) read([]byte) (int, error) { return 0, errors.ErrUnsupported }

func (*directReader) close() {}
