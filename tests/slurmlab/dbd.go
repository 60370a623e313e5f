package slurmlab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Accounting: a real slurmdbd over a real MariaDB, for what needs Slurm's
// accounting database (QOS, associations, GrpTRES limits, preempt/qos).
//
// Both run as the other daemons do: started by the lab with its marker,
// MariaDB always from the host's packages and slurmdbd from the lab's
// Slurm: in a rooted lab chrooted into Options.Root, whose root must then
// carry it (slurmdbd installed into a copy of a make roots root;
// checkDBRoot). Not the root's MariaDB: sid's 11.8 server with its
// Connector/C refused slurmdbd's first query ("5027 Number of columns in
// result set exceeds maximum allowed number of columns"), where the
// host's 10.11 serves 24.11's and 26.05's slurmdbd alike,
// foreground, on private TCP ports of 127.0.0.1, with every file under the
// lab directory (db/data is MariaDB's data directory, db/mysqld.sock its
// socket, etc/slurmdbd.conf next to slurm.conf, where slurmdbd looks for it
// through SLURM_CONF). No system service is started or touched: the
// packages are installed with policy-rc.d refusing every start
// (packages.go), and the server reads no system option file
// (--no-defaults).
//
// Start order: MariaDB (its own database made by mariadb-install-db), a
// user for slurmdbd, slurmdbd, the cluster registered with sacctmgr, then
// slurmctld with AccountingStorageType=accounting_storage/slurmdbd. Stop
// order (StopDir): the slurmds, slurmctld, slurmdbd, MariaDB, the jobs'
// processes, munged.

// DBPackages are the Debian packages accounting needs.
var DBPackages = []string{"mariadb-server", "mariadb-client", "slurmdbd"}

const (
	sbinMariadb  = "/usr/sbin/mariadbd"
	binInstallDB = "/usr/bin/mariadb-install-db"
	binMariadb   = "/usr/bin/mariadb"
	sbinDbd      = "/usr/sbin/slurmdbd"
	dbdPlugin    = StockPluginDir + "/accounting_storage_mysql.so"
)

// EnsureDBPackages installs MariaDB and slurmdbd with apt-get when missing
// (about 40 s on a fresh machine), starting no service.
func EnsureDBPackages(ctx context.Context, logf func(string, ...any)) error {
	return ensure(ctx, logf, []string{sbinMariadb, binInstallDB, binMariadb, sbinDbd, dbdPlugin}, DBPackages)
}

// checkDBRoot fails unless a rooted lab's root carries slurmdbd and its
// MySQL plugin (the roots of make roots do not; slurmdbd installed into a
// copy of one does: cmd/gangtopo/internal/traces/testdata/sacct/README.md).
func checkDBRoot(root string) error {
	for _, f := range []string{sbinDbd, dbdPlugin} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			return fmt.Errorf("slurmlab: accounting in the root %s needs slurmdbd installed there (%s is missing): install it into a copy of the root, never into make roots' own", root, f)
		}
	}
	return nil
}

// accounting is the state of a lab's database and slurmdbd.
type accounting struct {
	dbPort, dbdPort int
	pass            string // slurmdbd's database password (the lab's own)
}

func (l *Lab) dbSocket() string { return l.Path("db", "mysqld.sock") }

// startAccounting brings MariaDB and slurmdbd up and registers the
// cluster; slurm.conf must already name the lab's cluster.
func (l *Lab) startAccounting(ctx context.Context) error {
	t0 := time.Now()
	if err := l.startMariaDB(ctx); err != nil {
		return err
	}
	if err := l.startDbd(ctx); err != nil {
		return err
	}
	if _, err := l.Sacctmgr(ctx, "add", "cluster", clusterName); err != nil {
		return err
	}
	l.opts.Logf("slurmlab: MariaDB (port %d) and slurmdbd (port %d) up after %v", l.acct.dbPort, l.acct.dbdPort, time.Since(t0).Round(time.Millisecond))
	return nil
}

// startMariaDB makes a fresh data directory and starts the server on the
// lab's socket and port, then creates slurmdbd's user.
func (l *Lab) startMariaDB(ctx context.Context) error {
	data := l.Path("db", "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return err
	}
	argv := []string{binInstallDB, "--no-defaults", "--datadir=" + data, "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db"}
	install := exec.CommandContext(ctx, argv[0], argv[1:]...)
	install.Env = l.Env()
	if out, err := install.CombinedOutput(); err != nil {
		return fmt.Errorf("mariadb-install-db: %v: %s", err, tail(string(out), 10))
	}
	_, err := l.spawn("mariadbd", nil, sbinMariadb, "--no-defaults", "--datadir="+data, "--socket="+l.dbSocket(),
		fmt.Sprintf("--port=%d", l.acct.dbPort), "--bind-address=127.0.0.1", "--user=root", "--skip-name-resolve",
		"--pid-file="+l.Path("run", "mariadbd.pid"), "--log-error="+l.Path("log", "mariadb.log"),
		"--innodb-buffer-pool-size=64M", "--innodb-log-file-size=48M", "--innodb-lock-wait-timeout=900", "--skip-log-bin")
	if err != nil {
		return err
	}
	if err := waitFor(ctx, 60*time.Second, "MariaDB to answer", func() bool {
		_, err := l.sql(ctx, "SELECT 1")
		return err == nil
	}); err != nil {
		return fmt.Errorf("%w: %s", err, l.LogTail("mariadb.log", 5))
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	l.acct.pass = hex.EncodeToString(b)
	_, err = l.sql(ctx, fmt.Sprintf("CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '%s'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';", l.acct.pass))
	return err
}

// sql runs statements as MariaDB's root over the lab's socket.
func (l *Lab) sql(ctx context.Context, stmt string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binMariadb, "--no-defaults", "--socket="+l.dbSocket(), "-uroot", "-N", "-e", stmt)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("mariadb: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// dbdConf is the lab's slurmdbd.conf; it holds a password, so only its
// owner reads it (slurmdbd refuses a file others may read).
const dbdConf = `# written by tests/slurmlab for a throw-away lab in %[1]s
AuthType=auth/munge
AuthInfo=socket=%[1]s/munge/munge.socket.2
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=%[2]d
SlurmUser=root
DebugLevel=info
LogFile=%[1]s/log/slurmdbd.log
PidFile=%[1]s/run/slurmdbd.pid
PluginDir=%[3]s
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=%[4]d
StorageUser=slurm
StoragePass=%[5]s
StorageLoc=slurm_acct_db
`

// startDbd writes slurmdbd.conf and starts slurmdbd in the foreground;
// it answers once sacctmgr does.
func (l *Lab) startDbd(ctx context.Context) error {
	conf := fmt.Sprintf(dbdConf, l.Dir, l.acct.dbdPort, StockPluginDir, l.acct.dbPort, l.acct.pass)
	if err := os.WriteFile(l.Path("etc", "slurmdbd.conf"), []byte(conf), 0o600); err != nil {
		return err
	}
	pid, err := l.spawn("slurmdbd", nil, l.inRoot("", sbinDbd, "-D")...)
	if err != nil {
		return err
	}
	var last error
	err = waitFor(ctx, 60*time.Second, "slurmdbd to answer", func() bool {
		if !belongs(pid, l.Dir) {
			return true
		}
		_, last = l.Run(ctx, 5*time.Second, "sacctmgr", "-n", "show", "cluster")
		return last == nil
	}, func() error {
		if !belongs(pid, l.Dir) {
			return fmt.Errorf("slurmdbd exited at start: %s", l.LogTail("slurmdbd.log", 5))
		}
		return nil
	})
	if err != nil && last != nil {
		err = fmt.Errorf("%w (last: %v)", err, last)
	}
	return err
}

// Sacctmgr runs `sacctmgr -i args...` (no confirmation) against the lab's
// slurmdbd and returns its output.
func (l *Lab) Sacctmgr(ctx context.Context, args ...string) (string, error) {
	return l.Run(ctx, DefaultTimeout, "sacctmgr", append([]string{"-i"}, args...)...)
}

// accountingConf is what slurm.conf says about accounting: slurmdbd, its
// limits enforced (GrpTRES needs limits; a job's QOS must be one its
// association may use), GPUs counted as a TRES. AccountingStoragePass
// names the munge socket for connections to slurmdbd: those do not use
// AuthInfo's, and would look for the system munged.
func (l *Lab) accountingConf() []string {
	if !l.opts.Accounting {
		return []string{"AccountingStorageType=accounting_storage/none"}
	}
	return []string{"AccountingStorageType=accounting_storage/slurmdbd", "AccountingStorageHost=localhost",
		fmt.Sprintf("AccountingStoragePort=%d", l.acct.dbdPort), "AccountingStoragePass=" + l.mungeSocket(),
		"AccountingStorageEnforce=associations,limits,qos",
		"AccountingStorageTRES=gres/gpu"}
}

// StopDbd stops the lab's slurmdbd (by PID, as Stop does), for tests of
// what gangtopo does while Slurm's accounting is unreachable; slurmctld
// goes on and queues what it sends. StartDbd starts it again.
func (l *Lab) StopDbd() error {
	var pids []int
	for _, p := range l.procs {
		if p.Name == "slurmdbd" {
			pids = append(pids, p.PID)
		}
	}
	if left := stopPIDs(pids, l.Dir, StopGrace); left > 0 {
		return fmt.Errorf("slurmlab: slurmdbd survived SIGKILL")
	}
	return nil
}

// StartDbd starts the lab's slurmdbd again after StopDbd, and waits until
// sacctmgr answers.
func (l *Lab) StartDbd(ctx context.Context) error {
	if !l.opts.Accounting {
		return fmt.Errorf("slurmlab: the lab runs no accounting (Options.Accounting)")
	}
	return l.startDbd(ctx)
}
