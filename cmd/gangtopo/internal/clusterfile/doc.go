// Package clusterfile loads a topology (cluster) file for the commands and
// the daemon, and notices when it changes.
package clusterfile
