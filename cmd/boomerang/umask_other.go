//go:build !unix

package main

// restrictNewFiles has nothing to do where there is no umask.
func restrictNewFiles() {}
