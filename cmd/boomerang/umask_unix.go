//go:build unix

package main

import "syscall"

// restrictNewFiles makes the files and directories the process creates
// readable by its user alone (mode 0600 and 0700).
func restrictNewFiles() { syscall.Umask(0o077) }
