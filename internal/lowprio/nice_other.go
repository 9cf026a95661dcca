//go:build !linux

package lowprio

import "errors"

func setNice(int) error { return errors.New("lowprio: thread priorities are not supported here") }

func thread() (tid, nice int) { return 0, 0 }
