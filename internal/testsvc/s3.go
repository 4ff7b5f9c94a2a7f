package testsvc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// EnvS3 names the S3-compatible server for tests: the path of a versitygw
// binary that the helper starts (once per test binary, on a free loopback
// port, over a fresh directory), or the URL of a running server with its
// credentials, http://KEY:SECRET@host:port. Unset, the helper looks for the
// versitygw that .ci/install-deps builds (S3ServerPath).
const EnvS3 = "GOVKIT_TEST_S3"

// S3Server is the S3-compatible server the tests use, and the version
// .ci/install-deps builds. versitygw is a plain Go module (semver tags, no
// replace directives), so `go install` builds it from the module proxy;
// its posix back end keeps objects as files in a directory.
const (
	S3ServerModule  = "github.com/versity/versitygw/cmd/versitygw"
	S3ServerVersion = "v1.8.0"
)

// S3ServerPath is where .ci/install-deps puts the versitygw binary:
// $HOME/.cache/govkit-tools/versitygw-<version>/versitygw.
func S3ServerPath() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "govkit-tools", "versitygw-"+S3ServerVersion, "versitygw")
}

// S3 is a test's bucket on the test S3 server. The bucket is empty at the
// start and removed, with everything in it, when the test ends.
type S3 struct {
	Endpoint        string // http://127.0.0.1:port
	Region          string
	AccessKeyID     string
	SecretAccessKey string
	Bucket          string
	Client          *minio.Client
}

var s3server struct {
	once sync.Once
	s3   S3 // Endpoint and credentials
	err  error
	skip string
}

// RequireS3 creates an empty bucket for this test on the test S3 server
// (starting the server at the first call in this test binary) and removes
// it when the test ends.
func RequireS3(t testing.TB) S3 {
	t.Helper()
	s3server.once.Do(startS3)
	if s3server.skip != "" {
		missing(t, "%s", s3server.skip)
	}
	if s3server.err != nil {
		t.Fatalf("testsvc: S3 server: %v", s3server.err)
	}
	s := s3server.s3
	u, _ := url.Parse(s.Endpoint)
	client, err := minio.New(u.Host, &minio.Options{
		Creds: credentials.NewStaticV4(s.AccessKeyID, s.SecretAccessKey, ""), Region: s.Region,
		Secure: u.Scheme == "https", BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		t.Fatalf("testsvc: S3 client: %v", err)
	}
	s.Client = client
	s.Bucket = "govkit-test-" + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := client.MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{Region: s.Region}); err != nil {
		t.Fatalf("testsvc: create bucket %s: %v", s.Bucket, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for u := range client.ListIncompleteUploads(ctx, s.Bucket, "", true) {
			if u.Err == nil {
				client.RemoveIncompleteUpload(ctx, s.Bucket, u.Key)
			}
		}
		objects := client.ListObjects(ctx, s.Bucket, minio.ListObjectsOptions{Recursive: true})
		for r := range client.RemoveObjects(ctx, s.Bucket, objects, minio.RemoveObjectsOptions{}) {
			t.Errorf("testsvc: empty bucket %s: %v", s.Bucket, r.Err)
		}
		if err := client.RemoveBucket(ctx, s.Bucket); err != nil {
			t.Errorf("testsvc: remove bucket %s: %v", s.Bucket, err)
		}
	})
	return s
}

// startS3 finds or starts the server, once per test binary.
func startS3() {
	v := os.Getenv(EnvS3)
	if strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") {
		u, err := url.Parse(v)
		if err != nil || u.User == nil {
			s3server.err = fmt.Errorf("%s must be http://KEY:SECRET@host:port", EnvS3)
			return
		}
		secret, _ := u.User.Password()
		s3server.s3 = S3{Endpoint: u.Scheme + "://" + u.Host, Region: "us-east-1", AccessKeyID: u.User.Username(), SecretAccessKey: secret}
		return
	}
	bin := v
	if bin == "" {
		bin = S3ServerPath()
	}
	if _, err := os.Stat(bin); err != nil {
		s3server.skip = fmt.Sprintf("S3-compatible server not found: set %s to a versitygw binary or to http://KEY:SECRET@host:port of a running server (.ci/install-deps builds versitygw %s into %s)",
			EnvS3, S3ServerVersion, S3ServerPath())
		return
	}
	s3server.s3, s3server.err = runVersitygw(bin)
}

// runVersitygw starts versitygw on a free loopback port over a fresh
// directory. The server outlives any one test, so it is tied to the test
// binary instead: it gets SIGKILL when the process that started it ends
// (Pdeathsig, from a thread that stays alive as long as the process), and
// directories left by earlier, killed test binaries are removed here.
func runVersitygw(bin string) (S3, error) {
	removeStaleS3Dirs()
	dir, err := os.MkdirTemp("", "govkit-test-s3-"+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return S3{}, err
	}
	s := S3{Region: "us-east-1", AccessKeyID: "govkit" + randomHex(4), SecretAccessKey: randomHex(16)}
	var lastErr error
	// Another process may take the port between our probe and the
	// server's bind; a few attempts make that harmless.
	for range 5 {
		port, err := freePort()
		if err != nil {
			return S3{}, err
		}
		s.Endpoint = "http://127.0.0.1:" + strconv.Itoa(port)
		cmd := exec.Command(bin, "--access", s.AccessKeyID, "--secret", s.SecretAccessKey,
			"--region", s.Region, "--port", "127.0.0.1:"+strconv.Itoa(port), "--quiet", "posix", dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if lastErr = startOnLockedThread(cmd); lastErr != nil {
			return S3{}, lastErr
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		if lastErr = waitHTTP(s.Endpoint, exited); lastErr == nil {
			return s, nil
		}
		cmd.Process.Kill()
	}
	return S3{}, fmt.Errorf("versitygw did not start: %v", lastErr)
}

// startOnLockedThread starts cmd from an OS thread that never exits:
// Pdeathsig fires when the starting thread ends, and Go may otherwise end
// threads before the process does.
func startOnLockedThread(cmd *exec.Cmd) error {
	started := make(chan error)
	go func() {
		runtime.LockOSThread()
		started <- cmd.Start()
		select {} // keep the thread
	}()
	return <-started
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitHTTP waits until the server answers HTTP (any status) or exits.
func waitHTTP(base string, exited <-chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("exited: %v", err)
		default:
		}
		resp, err := http.Get(base + "/")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("no answer within 30 s")
}

// removeStaleS3Dirs removes the data directories of test S3 servers whose
// test binary is gone.
func removeStaleS3Dirs() {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), "govkit-test-s3-*"))
	for _, m := range matches {
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(m), "govkit-test-s3-"), "-", 2)[0])
		if err != nil {
			continue
		}
		if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
			continue // still running
		}
		os.RemoveAll(m)
	}
}
