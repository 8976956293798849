//go:build unix && !linux

package localstack

import "syscall"

// sysProcAttr puts a child in its own process group so Stop can signal the group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
