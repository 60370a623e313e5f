// Package debpkg tests the Debian package's maintainer scripts (c/deb) as
// dpkg runs them, with sh, against configuration files the tests write:
// which slurm.conf and plugstack.conf lines make prerm refuse a removal.
// What needs systemd and dpkg (the units stopped, masked and restarted)
// is tested on a Debian root by tests/e2e (package_*_test.go).
package debpkg
