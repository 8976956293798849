package localstack

import "syscall"

// sysProcAttr puts a child in its own process group (Stop signals the group)
// and asks the kernel to kill it if the thread that started it dies, so a
// crashed test binary or `odaflow dev` does not leave servers behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// sysProcAttrAs is sysProcAttr running the child as cred's user (nil = the
// current user). Go sets the parent-death signal after switching user, so it
// survives the switch.
func sysProcAttrAs(cred *syscall.Credential) *syscall.SysProcAttr {
	a := sysProcAttr()
	a.Credential = cred
	return a
}
