//go:build unix && !linux

package localstack

import "syscall"

// sysProcAttr puts a child in its own process group so Stop can signal the group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// sysProcAttrAs is sysProcAttr running the child as cred's user (nil = the
// current user).
func sysProcAttrAs(cred *syscall.Credential) *syscall.SysProcAttr {
	a := sysProcAttr()
	a.Credential = cred
	return a
}
