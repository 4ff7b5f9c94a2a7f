// Package s3store keeps uploaded documents' bytes in S3-compatible object
// storage (Amazon S3, MinIO, Ceph RGW, versitygw, …), chosen with
// DOCUMENT_STORAGE=s3://bucket/prefix, so that every replica of the
// platform reads and writes the same documents.
//
// It keeps filestore's contract, in object-storage terms:
//
//   - Stage starts a multipart upload and streams the body into it one part
//     (PartSize, 5 MiB by default) at a time, hashing and sniffing it on the
//     way: one part buffer per upload in progress, never the whole file. The
//     multipart upload is invisible to readers until it is completed. A
//     body that fails, is too large or is empty aborts it.
//   - Upload.Complete completes the multipart upload: the object appears
//     under prefix+key, whole, at once. Upload.Abort aborts it.
//   - Finish completes a multipart upload a crash left with every part
//     uploaded (the parts are listed back from the store), Discard aborts
//     the key's multipart uploads and then removes its object, Staged lists
//     the unfinished multipart uploads and Stored the objects under the
//     prefix: what package upload's sweeper needs to finish or remove what
//     a crash left. (A bucket lifecycle rule AbortIncompleteMultipartUpload
//     with a few days' margin is a good second line; a shorter one could
//     abort the parts of an upload whose row waits for the sweeper.)
//   - Open streams an object with ranged GETs: http.ServeContent seeks, and a
//     seek away from where the open response is opens a new one at the new
//     offset, so a download is never held in memory and a Range request
//     fetches only its range.
//
// Each part is sent with its SHA-256 in the signed request, so the store
// refuses a part that was corrupted on the way.
//
// The client is minio-go v7: a small library (it adds 3 MB to govkit's
// binary; the official AWS SDK would add about 7 MB and two thirds more
// cold-build CPU, see the README) that speaks the S3 API to any
// S3-compatible store, signs with SigV4 and finds credentials the way AWS
// tools do.
package s3store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/govkit/govkit/docplatform/filestore"
)

// MinPartSize is S3's smallest part (except the last): 5 MiB.
const MinPartSize = 5 << 20

// maxParts is S3's largest part count for one upload.
const maxParts = 10000

// cleanupTimeout bounds aborting an upload and removing an object after a
// failure, which must happen even when the request's context has ended.
const cleanupTimeout = 30 * time.Second

// Addressing styles (AWS_S3_ADDRESSING_STYLE, the AWS CLI's s3
// addressing_style): auto is virtual-hosted for Amazon S3 and path-style
// for any other endpoint, which is what MinIO, Ceph and versitygw expect.
const (
	AddressingAuto    = "auto"
	AddressingPath    = "path"
	AddressingVirtual = "virtual"
)

// Config says where the documents live and how to reach them.
type Config struct {
	Bucket string
	// Prefix is put before every object name; empty or ending in "/".
	Prefix string
	// Endpoint is the store's base URL (AWS_ENDPOINT_URL_S3 or
	// AWS_ENDPOINT_URL); empty means Amazon S3. http:// disables TLS.
	Endpoint string
	// Region (AWS_REGION or AWS_DEFAULT_REGION); empty asks the store.
	Region string
	// AccessKeyID, SecretAccessKey and SessionToken (AWS_ACCESS_KEY_ID,
	// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN). Without a key id the
	// client looks, in order, in the shared credentials file
	// (AWS_SHARED_CREDENTIALS_FILE, AWS_PROFILE) and at the platform's
	// identity service (web identity token for EKS service accounts, ECS
	// task role, EC2 instance profile).
	AccessKeyID, SecretAccessKey, SessionToken string
	// AddressingStyle is auto (default), path or virtual.
	AddressingStyle string
	// PartSize is the multipart part size, at least MinPartSize (the
	// default); uploads in progress hold one part in memory each.
	PartSize int64
	// Timeout bounds how long a call waits for a store that does not
	// answer (default DefaultTimeout): connecting may take a fifth of it
	// and each of the two attempts a call makes waits a third of it for
	// the answer's headers, so a store that stopped answering fails the
	// request in about Timeout. (A body in transit is not cut: a slow
	// download of a large document is not an outage.)
	Timeout time.Duration
}

// DefaultTimeout is Config.Timeout's default.
const DefaultTimeout = 5 * time.Second

// bucketName is S3's rule for bucket names (3–63 lowercase letters,
// digits, dots and hyphens, starting and ending with a letter or digit).
var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// ParseURL reads DOCUMENT_STORAGE's s3://bucket/prefix form. The prefix
// may be empty; it is returned ending in "/" otherwise.
func ParseURL(s string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(s, "s3://")
	if !ok {
		return "", "", errors.New("must start with s3://")
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if !bucketName.MatchString(bucket) || strings.Contains(bucket, "..") {
		return "", "", fmt.Errorf("bucket %q is not a valid S3 bucket name (3-63 lowercase letters, digits, dots and hyphens)", bucket)
	}
	if strings.ContainsAny(prefix, "?#\\") || strings.ContainsFunc(prefix, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", "", errors.New("the prefix must not contain ?, #, \\ or control characters")
	}
	for _, seg := range strings.Split(strings.Trim(prefix, "/"), "/") {
		if seg == "." || seg == ".." {
			return "", "", errors.New("the prefix must not contain . or .. segments")
		}
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	if len(prefix)+32 > 1024 {
		return "", "", errors.New("the prefix is too long for S3 object names")
	}
	return bucket, prefix, nil
}

// Store is a bucket (and prefix) of objects named by random keys.
type Store struct {
	core     *minio.Core
	bucket   string
	prefix   string
	endpoint string
	partSize int64
	buffers  sync.Pool // *[]byte of partSize
}

// Open connects to the store and checks that the bucket exists (the
// platform never creates buckets: their policies are the operator's).
func Open(ctx context.Context, c Config) (*Store, error) {
	host, secure := "s3.amazonaws.com", true
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("s3store: endpoint %q must be an http(s) URL without a path", c.Endpoint)
		}
		host, secure = u.Host, u.Scheme == "https"
	}
	lookup := minio.BucketLookupAuto
	switch c.AddressingStyle {
	case "", AddressingAuto:
	case AddressingPath:
		lookup = minio.BucketLookupPath
	case AddressingVirtual:
		lookup = minio.BucketLookupDNS
	default:
		return nil, fmt.Errorf("s3store: addressing style %q is not auto, path or virtual", c.AddressingStyle)
	}
	creds := credentials.NewStaticV4(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)
	if c.AccessKeyID == "" {
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.FileAWSCredentials{},
			&credentials.IAM{},
		})
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	transport, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, fmt.Errorf("s3store: %w", err)
	}
	transport.DialContext = (&net.Dialer{Timeout: timeout / 5, KeepAlive: 30 * time.Second}).DialContext
	transport.TLSHandshakeTimeout = timeout / 5
	transport.ResponseHeaderTimeout = timeout / 3
	core, err := minio.NewCore(host, &minio.Options{
		Creds: creds, Secure: secure, Region: c.Region, BucketLookup: lookup, Transport: transport,
		// A store that is down should fail a request in seconds, not
		// after minio-go's default ten attempts; a second attempt still
		// rides out a dropped connection or a SlowDown.
		MaxRetries: 2,
	})
	if err != nil {
		return nil, fmt.Errorf("s3store: %w", err)
	}
	part := max(c.PartSize, MinPartSize)
	s := &Store{core: core, bucket: c.Bucket, prefix: c.Prefix, endpoint: host, partSize: part}
	s.buffers.New = func() any { b := make([]byte, part); return &b }
	ok, err := core.BucketExists(ctx, c.Bucket)
	if err != nil {
		return nil, fmt.Errorf("s3store: bucket %s at %s: %w", c.Bucket, host, err)
	}
	if !ok {
		return nil, fmt.Errorf("s3store: bucket %s does not exist at %s", c.Bucket, host)
	}
	return s, nil
}

// Ping reports whether the store answers and the bucket is there (for
// the health endpoint).
func (s *Store) Ping(ctx context.Context) error {
	ok, err := s.core.BucketExists(ctx, s.bucket)
	if err != nil {
		return storageErr("bucket exists", err)
	}
	if !ok {
		return fmt.Errorf("%w: bucket %s does not exist", filestore.ErrStorage, s.bucket)
	}
	return nil
}

// String names the bucket and prefix, for start-up logs.
func (s *Store) String() string { return "s3://" + s.bucket + "/" + s.prefix + " at " + s.endpoint }

func (s *Store) object(key string) string { return s.prefix + key }

// storageErr marks an error of the store as filestore.ErrStorage.
func storageErr(op string, err error) error {
	return fmt.Errorf("%w: s3 %s: %w", filestore.ErrStorage, op, err)
}

// Stage streams r into a new multipart upload. More than max bytes:
// filestore.ErrTooLarge; none: filestore.ErrEmpty (and the store is not
// contacted); a read error of r is returned as it is; the store failing is
// filestore.ErrStorage. On any error the multipart upload is aborted.
func (s *Store) Stage(ctx context.Context, r io.Reader, max int64) (*filestore.Upload, error) {
	partSize := s.partSize
	var buf []byte
	if need := (max + 1 + maxParts - 1) / maxParts; need > partSize {
		// A limit so large that parts of the usual size would run out.
		partSize = (need + MinPartSize - 1) / MinPartSize * MinPartSize
		buf = make([]byte, partSize)
	} else {
		bp := s.buffers.Get().(*[]byte)
		defer s.buffers.Put(bp)
		buf = *bp
	}
	m := filestore.NewMeter()
	body := io.TeeReader(io.LimitReader(r, max+1), m)
	key := filestore.NewKey()
	object := s.object(key)
	var uploadID string
	var parts []minio.CompletePart
	abort := func() {
		if uploadID == "" {
			return
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		s.core.AbortMultipartUpload(actx, s.bucket, object, uploadID)
	}
	for {
		n, rerr := io.ReadFull(body, buf)
		if rerr != nil && rerr != io.EOF && rerr != io.ErrUnexpectedEOF {
			abort()
			return nil, rerr
		}
		if err := m.Check(max); errors.Is(err, filestore.ErrTooLarge) {
			abort()
			return nil, err
		}
		if n == 0 {
			break
		}
		if uploadID == "" {
			id, err := s.core.NewMultipartUpload(ctx, s.bucket, object, minio.PutObjectOptions{})
			if err != nil {
				return nil, storageErr("create multipart upload", err)
			}
			uploadID = id
		}
		sum := sha256.Sum256(buf[:n])
		p, err := s.core.PutObjectPart(ctx, s.bucket, object, uploadID, len(parts)+1, bytes.NewReader(buf[:n]), int64(n),
			minio.PutObjectPartOptions{Sha256Hex: hex.EncodeToString(sum[:])})
		if err != nil {
			abort()
			return nil, storageErr("upload part", err)
		}
		parts = append(parts, minio.CompletePart{PartNumber: p.PartNumber, ETag: p.ETag})
		filestore.PartStaged(ctx, m.Size())
		if rerr != nil {
			break // the last, short part
		}
	}
	if err := m.Check(max); err != nil {
		abort()
		return nil, err
	}
	complete := func(ctx context.Context) error {
		if _, err := s.core.CompleteMultipartUpload(ctx, s.bucket, object, uploadID, parts, minio.PutObjectOptions{}); err != nil {
			return storageErr("complete multipart upload", err)
		}
		return nil
	}
	return filestore.NewUpload(m, key, complete, abort), nil
}

// Open streams the object under key; size is its recorded size. A missing
// object is filestore.ErrNotFound.
func (s *Store) Open(ctx context.Context, key string, size int64) (io.ReadSeekCloser, error) {
	if !filestore.ValidKey(key) {
		return nil, filestore.ErrNotFound
	}
	o := &objectReader{ctx: ctx, s: s, object: s.object(key), size: size}
	if err := o.open(); err != nil {
		if minio.ToErrorResponse(err).Code == "NoSuchKey" {
			return nil, filestore.ErrNotFound
		}
		return nil, storageErr("get object", err)
	}
	return o, nil
}

// objectReader is an io.ReadSeekCloser over ranged GETs. pos is where the
// reader is; bodyPos is where the open response body is. Seeking only
// moves pos; a Read where the two differ opens a new response at pos.
type objectReader struct {
	ctx     context.Context
	s       *Store
	object  string
	size    int64
	pos     int64
	body    io.ReadCloser
	bodyPos int64
}

func (o *objectReader) open() error {
	if o.body != nil {
		o.body.Close()
		o.body = nil
	}
	var opts minio.GetObjectOptions
	if o.pos > 0 {
		if err := opts.SetRange(o.pos, 0); err != nil {
			return err
		}
	}
	body, _, _, err := o.s.core.GetObject(o.ctx, o.s.bucket, o.object, opts)
	if err != nil {
		return err
	}
	o.body, o.bodyPos = body, o.pos
	return nil
}

func (o *objectReader) Read(p []byte) (int, error) {
	if o.pos >= o.size {
		return 0, io.EOF
	}
	if o.body == nil || o.bodyPos != o.pos {
		if err := o.open(); err != nil {
			return 0, storageErr("get object", err)
		}
	}
	if rest := o.size - o.pos; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := o.body.Read(p)
	o.pos += int64(n)
	o.bodyPos += int64(n)
	if err == io.EOF && o.pos < o.size {
		err = io.ErrUnexpectedEOF
	}
	if err == io.EOF {
		err = nil // the next Read says EOF, from pos
	}
	return n, err
}

func (o *objectReader) Seek(offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = o.pos + offset
	case io.SeekEnd:
		abs = o.size + offset
	default:
		return 0, errors.New("s3store: invalid whence")
	}
	if abs < 0 {
		return 0, errors.New("s3store: negative position")
	}
	o.pos = abs
	return abs, nil
}

func (o *objectReader) Close() error {
	if o.body == nil {
		return nil
	}
	err := o.body.Close()
	o.body = nil
	return err
}

// Finish completes key's multipart upload if a crash left it with every
// part uploaded (size bytes in parts numbered from 1 without a gap), and
// then checks that key's object holds size bytes: filestore.ErrNotFound
// when it does not.
func (s *Store) Finish(ctx context.Context, key string, size int64) error {
	if !filestore.ValidKey(key) {
		return filestore.ErrNotFound
	}
	object := s.object(key)
	err := s.uploadsOf(ctx, object, func(uploadID string) error {
		parts, total, err := s.partsOf(ctx, object, uploadID)
		if err != nil || total != size {
			return err
		}
		// Another process finishing it at the same moment completes first:
		// then the object is there, which the check below sees.
		s.core.CompleteMultipartUpload(ctx, s.bucket, object, uploadID, parts, minio.PutObjectOptions{})
		return nil
	})
	if err != nil {
		return err
	}
	info, err := s.core.StatObject(ctx, s.bucket, object, minio.StatObjectOptions{})
	switch {
	case minio.ToErrorResponse(err).Code == "NoSuchKey":
		return filestore.ErrNotFound
	case err != nil:
		return storageErr("stat object", err)
	case info.Size != size:
		return fmt.Errorf("%w: %s holds %d bytes, not %d", filestore.ErrNotFound, key, info.Size, size)
	}
	return nil
}

// partsOf lists the parts of an unfinished multipart upload, as
// CompleteMultipartUpload wants them, with their total size; nil parts
// when they are not numbered 1..n without a gap, or the upload is gone.
func (s *Store) partsOf(ctx context.Context, object, uploadID string) ([]minio.CompletePart, int64, error) {
	var parts []minio.CompletePart
	var total int64
	marker := 0
	for {
		res, err := s.core.ListObjectParts(ctx, s.bucket, object, uploadID, marker, 1000)
		if minio.ToErrorResponse(err).Code == "NoSuchUpload" {
			return nil, 0, nil // another process completed or aborted it just now
		}
		if err != nil {
			return nil, 0, storageErr("list parts", err)
		}
		for _, p := range res.ObjectParts {
			if p.PartNumber != len(parts)+1 {
				return nil, 0, nil
			}
			parts = append(parts, minio.CompletePart{PartNumber: p.PartNumber, ETag: p.ETag})
			total += p.Size
		}
		if !res.IsTruncated || res.NextPartNumberMarker <= marker {
			return parts, total, nil
		}
		marker = res.NextPartNumberMarker
	}
}

// Discard aborts key's unfinished multipart uploads and then removes its
// object, so that a completion racing with it finds nothing to complete
// or is undone. Nothing there is not an error.
func (s *Store) Discard(ctx context.Context, key string) error {
	if !filestore.ValidKey(key) {
		return filestore.ErrNotFound
	}
	object := s.object(key)
	err := s.uploadsOf(ctx, object, func(uploadID string) error {
		if err := s.core.AbortMultipartUpload(ctx, s.bucket, object, uploadID); err != nil && minio.ToErrorResponse(err).Code != "NoSuchUpload" {
			return storageErr("abort multipart upload", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.core.RemoveObject(ctx, s.bucket, object, minio.RemoveObjectOptions{}); err != nil {
		return storageErr("remove object", err)
	}
	return nil
}

// uploadsOf calls f with the id of each unfinished multipart upload of
// object.
func (s *Store) uploadsOf(ctx context.Context, object string, f func(uploadID string) error) error {
	return s.incomplete(ctx, object, func(u minio.ObjectMultipartInfo) error {
		if u.Key != object {
			return nil
		}
		return f(u.UploadID)
	})
}

// Staged calls fn with the key of each unfinished multipart upload under
// the prefix begun before t: uploads cut short, or in progress if t is
// recent. Unfinished uploads under the prefix not named after a key are
// aborted here, since no row can name them.
func (s *Store) Staged(ctx context.Context, before time.Time, fn func(key string) error) error {
	return s.incomplete(ctx, s.prefix, func(u minio.ObjectMultipartInfo) error {
		if !u.Initiated.Before(before) {
			return nil
		}
		key, _ := strings.CutPrefix(u.Key, s.prefix)
		if !filestore.ValidKey(key) {
			if err := s.core.AbortMultipartUpload(ctx, s.bucket, u.Key, u.UploadID); err != nil {
				return storageErr("abort multipart upload", err)
			}
			return nil
		}
		return fn(key)
	})
}

// Stored calls fn with the keys of the objects under the prefix, up to
// batch at a time.
func (s *Store) Stored(ctx context.Context, batch int, fn func(keys []string) error) error {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the listing if fn fails
	var keys []string
	for o := range s.core.Client.ListObjects(lctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix, Recursive: true}) {
		if o.Err != nil {
			return storageErr("list objects", o.Err)
		}
		key, _ := strings.CutPrefix(o.Key, s.prefix)
		if !filestore.ValidKey(key) {
			continue
		}
		if keys = append(keys, key); len(keys) == batch {
			if err := fn(keys); err != nil {
				return err
			}
			keys = keys[:0]
		}
	}
	if len(keys) > 0 {
		return fn(keys)
	}
	return nil
}

// incomplete calls f for each unfinished multipart upload of an object
// whose name begins with prefix.
func (s *Store) incomplete(ctx context.Context, prefix string, f func(minio.ObjectMultipartInfo) error) error {
	var keyMarker, idMarker string
	for {
		res, err := s.core.ListMultipartUploads(ctx, s.bucket, prefix, keyMarker, idMarker, "", 1000)
		if err != nil {
			return storageErr("list multipart uploads", err)
		}
		for _, u := range res.Uploads {
			if err := f(u); err != nil {
				return err
			}
		}
		if !res.IsTruncated || (res.NextKeyMarker == keyMarker && res.NextUploadIDMarker == idMarker) {
			return nil
		}
		keyMarker, idMarker = res.NextKeyMarker, res.NextUploadIDMarker
	}
}

// Files counts the objects and the unfinished multipart uploads under the
// prefix (for tests and operators checking that failed uploads left
// nothing).
func (s *Store) Files(ctx context.Context) (committed, incomplete int, err error) {
	for o := range s.core.Client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix, Recursive: true}) {
		if o.Err != nil {
			return 0, 0, storageErr("list objects", o.Err)
		}
		committed++
	}
	err = s.incomplete(ctx, s.prefix, func(minio.ObjectMultipartInfo) error { incomplete++; return nil })
	return committed, incomplete, err
}
