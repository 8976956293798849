package localstack

import "syscall"

// sysProcAttr puts a child in its own process group (Stop signals the group)
// and asks the kernel to kill it if the thread that started it dies, so a
// crashed test binary or `odaflow dev` does not leave servers behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
