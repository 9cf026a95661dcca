//go:build !linux

package lowprio

func setNice(int) {}
