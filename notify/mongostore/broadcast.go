package mongostore

import (
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/govkit/govkit/notify"
)

// A broadcast's work and results live outside the notification document,
// in three collections of ours, and every read or write of them is by _id,
// so its cost grows with the broadcast alone — never with other
// broadcasts, the subscription collection or the results recorded so far:
//
//	notificationBroadcast        {_id: notification ObjectId, run, chunks,
//	                              candidates, planned, httpHost, user, started}
//	notificationBroadcastChunk   {_id: "<notification hex>/<index>",
//	                              notificationId, index, count,
//	                              subscriptions: BinData}
//	notificationBroadcastResult  {_id: "<notification hex>/<index>",
//	                              notificationId, index, candidates: [ids],
//	                              successful: [ids], failed: [{subscriptionId,
//	                              userChannelId, error}], skipped: [ids],
//	                              complete}
//	                             {_id: "<notification hex>/<index>/<n>",
//	                              successful, failed, skipped}
//
// The header is written when the broadcast starts. Planning streams the
// candidate query once and writes, per chunk, the subscriptions as they
// were (the fields sending needs: a snapshot, as the original's list of
// candidate ids is fixed when the broadcast starts) and a result document
// listing the chunk's candidates. The snapshot is the subscriptions' BSON,
// compressed, in one binary field: FerretDB v1 turns every document into
// JSON and back field by field, which costs about 50 µs per subscription
// read as documents and 2 µs as bytes. The worker of a chunk appends its
// outcomes in numbered partial documents — inserts only, so two workers
// that both believe they hold the chunk (one of them after its lease
// expired) cannot overwrite each other — and, when the chunk is done,
// folds them into the chunk's result document and deletes them. Chunk
// indexes are dense from 0, so readers find a broadcast's documents by
// probing _ids until the first that is missing. The snapshots are deleted
// when the broadcast finishes; the results stay until the notification is
// purged.

// Broadcast is the header of a broadcast.
type Broadcast struct {
	NotificationID notify.ID
	// Run names this dispatch of the notification: a fresh dispatch (PUT
	// without dispatch) starts another run, and work of an older run is
	// dropped.
	Run string
	// Planned is set once every chunk is written; Chunks and Candidates
	// count them then.
	Planned    bool
	Chunks     int
	Candidates int64
	// HTTPHost is the resolved {http_host} of the messages; User made the
	// request (updatedBy of the final state).
	HTTPHost string
	User     notify.Fields
	Started  time.Time
	// Counts are the final counts, kept when the broadcast finished (nil
	// while it runs).
	Counts *notify.DispatchCounts
}

// MaxChunkBytes bounds the snapshot of one chunk (a document must stay
// under 16 MB on MongoDB): a chunk ends early when its subscriptions reach
// this size.
const MaxChunkBytes = 8 << 20

func (s *Store) broadcastColl() *mongo.Collection {
	return s.db.Collection(notify.CollNotificationBroadcast)
}

func (s *Store) chunkColl() *mongo.Collection {
	return s.db.Collection(notify.CollNotificationBroadcastChunk)
}

func (s *Store) resultColl() *mongo.Collection {
	return s.db.Collection(notify.CollNotificationBroadcastResult)
}

func chunkKey(nid notify.ID, index int) string {
	return nid.Hex() + "/" + strconv.Itoa(index)
}

// StartBroadcast records b as the header of its notification's broadcast
// unless one exists, and returns the header in force and whether it is b.
func (s *Store) StartBroadcast(ctx context.Context, b Broadcast) (Broadcast, bool, error) {
	doc := bson.D{
		{Key: "_id", Value: bson.ObjectID(b.NotificationID)},
		{Key: "run", Value: b.Run},
		{Key: "planned", Value: false},
		{Key: "chunks", Value: int32(0)},
		{Key: "candidates", Value: int64(0)},
		{Key: "httpHost", Value: b.HTTPHost},
		{Key: "started", Value: bson.NewDateTimeFromTime(b.Started)},
	}
	if b.User != nil {
		doc = append(doc, bson.E{Key: "user", Value: toBSON(b.User)})
	}
	_, err := s.broadcastColl().InsertOne(ctx, doc)
	if err == nil {
		return b, true, nil
	}
	if !errors.Is(mapErr(err), notify.ErrDuplicate) {
		return Broadcast{}, false, fmt.Errorf("mongostore: broadcast: %w", err)
	}
	cur, err := s.Broadcast(ctx, b.NotificationID)
	return cur, false, err
}

// Broadcast returns the header of a notification's broadcast, or
// notify.ErrNotFound.
func (s *Store) Broadcast(ctx context.Context, nid notify.ID) (Broadcast, error) {
	raw, err := s.broadcastColl().FindOne(ctx, bson.D{{Key: "_id", Value: bson.ObjectID(nid)}}).Raw()
	if err != nil {
		return Broadcast{}, fmt.Errorf("mongostore: broadcast: %w", mapErr(err))
	}
	return broadcastFrom(nid, raw)
}

// broadcastFrom decodes a header document.
func broadcastFrom(nid notify.ID, raw bson.Raw) (Broadcast, error) {
	f, err := rawDoc(raw)
	if err != nil {
		return Broadcast{}, fmt.Errorf("mongostore: broadcast: %w", err)
	}
	b := Broadcast{NotificationID: nid}
	b.Run, _ = f.String("run")
	if v, _ := f.Get("planned"); v == true {
		b.Planned = true
	}
	b.Chunks = int(number(f, "chunks"))
	b.Candidates = number(f, "candidates")
	b.HTTPHost, _ = f.String("httpHost")
	if u, ok := f.Get("user"); ok {
		b.User, _ = u.(notify.Fields)
	}
	if t, ok := f.Get("started"); ok {
		b.Started, _ = t.(time.Time)
	}
	if cf, ok := f.Get("counts"); ok {
		if cd, ok := cf.(notify.Fields); ok {
			c := notify.DispatchCounts{Candidates: number(cd, "candidates"), Successful: number(cd, "successful"), Failed: number(cd, "failed"), Skipped: number(cd, "skipped")}
			c.Pending = max(0, c.Candidates-c.Successful-c.Failed-c.Skipped)
			b.Counts = &c
		}
	}
	return b, nil
}

func number(f notify.Fields, key string) int64 {
	switch v, _ := f.Get(key); x := v.(type) {
	case int32:
		return int64(x)
	case int64:
		return x
	case float64:
		return int64(x)
	}
	return 0
}

// SetBroadcastPlanned marks run's plan complete with its chunk and
// candidate counts. A header of another run is left alone
// (notify.ErrNotFound).
func (s *Store) SetBroadcastPlanned(ctx context.Context, nid notify.ID, run string, chunks int, candidates int64) error {
	res, err := s.broadcastColl().UpdateOne(ctx,
		bson.D{{Key: "_id", Value: bson.ObjectID(nid)}, {Key: "run", Value: run}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "planned", Value: true}, {Key: "chunks", Value: int32(chunks)}, {Key: "candidates", Value: candidates}}}})
	if err != nil {
		return fmt.Errorf("mongostore: broadcast: %w", err)
	}
	if res.MatchedCount == 0 {
		return fmt.Errorf("mongostore: broadcast %s run %s: %w", nid.Hex(), run, notify.ErrNotFound)
	}
	return nil
}

// snapshotFields are the subscription fields a chunk keeps: what the
// filters, the mail merge and the unsubscribe headers read. The message
// templates of confirmationRequest, the largest part of a subscription,
// are left out.
var snapshotFields = bson.D{
	{Key: "_id", Value: 1},
	{Key: "serviceName", Value: 1},
	{Key: "channel", Value: 1},
	{Key: "state", Value: 1},
	{Key: "userChannelId", Value: 1},
	{Key: "userId", Value: 1},
	{Key: "data", Value: 1},
	{Key: "broadcastPushNotificationFilter", Value: 1},
	{Key: "unsubscriptionCode", Value: 1},
	{Key: "confirmationRequest.confirmationCode", Value: 1},
	{Key: "unsubscribedAdditionalServices", Value: 1},
}

// Plan says how PlanChunks writes a broadcast's chunks.
type Plan struct {
	ServiceName, Channel string
	// Size is the most candidates in a chunk.
	Size int
	// From is the first chunk index to write: the chunks before it were
	// written by a plan that was interrupted (see PlannedCandidates).
	From int
	// Pick, when not nil, decides for each subscription whether it is a
	// candidate, and whether a candidate is to be sent to (a document the
	// original left half-sent keeps its candidates and the outcomes it
	// holds inline; a resumed plan leaves out who is planned already).
	Pick func(subscriptionID string) (candidate, send bool)
	// Written, when not nil, is called after each chunk is written with
	// its number of candidates, so that it can be sent while planning
	// goes on.
	Written func(index, candidates int) error
}

// PlanChunks streams the confirmed subscriptions of a service and channel
// once — one query, in the order the server returns them, never held in
// memory together — and writes them as chunks of up to p.Size candidates
// (or MaxChunkBytes of snapshot) from index p.From: a snapshot document and
// a result document listing the candidates. Chunk documents an earlier plan
// left beyond the new last index are deleted. It returns the number of
// chunks (From included) and of candidates written.
func (s *Store) PlanChunks(ctx context.Context, nid notify.ID, p Plan) (chunks int, candidates int64, err error) {
	filter := bson.D{{Key: "serviceName", Value: p.ServiceName}, {Key: "state", Value: notify.StateConfirmed}, {Key: "channel", Value: p.Channel}}
	cur, err := s.db.Collection(notify.CollSubscription).Find(ctx, filter, options.Find().SetProjection(snapshotFields).SetBatchSize(1000))
	if err != nil {
		return 0, 0, fmt.Errorf("mongostore: broadcast candidates: %w", err)
	}
	defer cur.Close(context.WithoutCancel(ctx))
	chunks = p.From
	var (
		snap  []byte // the chunk's subscriptions to send, BSON back to back
		count int
		ids   bson.A
	)
	flush := func() error {
		if len(ids) == 0 {
			return nil
		}
		if err := s.writeChunk(ctx, nid, chunks, snap, count, ids); err != nil {
			return err
		}
		if p.Written != nil {
			if err := p.Written(chunks, len(ids)); err != nil {
				return err
			}
		}
		chunks++
		snap, count, ids = snap[:0], 0, nil
		return nil
	}
	for cur.Next(ctx) {
		oid, ok := cur.Current.Lookup("_id").ObjectIDOK()
		if !ok {
			continue
		}
		id := oid.Hex()
		candidate, send := true, true
		if p.Pick != nil {
			candidate, send = p.Pick(id)
		}
		if !candidate {
			continue
		}
		candidates++
		ids = append(ids, id)
		if send {
			// The raw document is kept as it came: no decoding.
			snap = append(snap, cur.Current...)
			count++
		}
		if len(ids) >= p.Size || len(snap) >= MaxChunkBytes {
			if err := flush(); err != nil {
				return 0, 0, err
			}
		}
	}
	if err := cur.Err(); err != nil {
		return 0, 0, fmt.Errorf("mongostore: broadcast candidates: %w", err)
	}
	if err := flush(); err != nil {
		return 0, 0, err
	}
	if _, err := s.deleteChunksFrom(ctx, nid, chunks); err != nil {
		return 0, 0, err
	}
	return chunks, candidates, nil
}

// PlannedCandidates returns what an interrupted plan wrote: the
// candidates of its complete chunks (those with a result document), how
// many chunks that is, and how many candidates. It holds them in memory:
// it serves only to resume a plan whose node died.
func (s *Store) PlannedCandidates(ctx context.Context, nid notify.ID) (map[string]bool, int, error) {
	ids := map[string]bool{}
	chunks := 0
	for ; ; chunks++ {
		raw, err := s.resultColl().FindOne(ctx, bson.D{{Key: "_id", Value: chunkKey(nid, chunks)}},
			options.FindOne().SetProjection(bson.D{{Key: "candidates", Value: 1}})).Raw()
		if errors.Is(err, mongo.ErrNoDocuments) {
			return ids, chunks, nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("mongostore: broadcast results %d: %w", chunks, err)
		}
		vals, _ := raw.Lookup("candidates").Array().Values()
		for _, v := range vals {
			if id, ok := v.StringValueOK(); ok {
				ids[id] = true
			}
		}
	}
}

func (s *Store) writeChunk(ctx context.Context, nid notify.ID, index int, snap []byte, count int, ids bson.A) error {
	key := chunkKey(nid, index)
	var z bytes.Buffer
	w, _ := flate.NewWriter(&z, flate.BestSpeed)
	_, _ = w.Write(snap)
	if err := w.Close(); err != nil {
		return fmt.Errorf("mongostore: broadcast chunk %d: %w", index, err)
	}
	head := bson.D{{Key: "_id", Value: key}, {Key: "notificationId", Value: bson.ObjectID(nid)}, {Key: "index", Value: int32(index)}}
	chunk := append(head[:3:3], bson.E{Key: "count", Value: int32(count)}, bson.E{Key: "subscriptions", Value: bson.Binary{Data: z.Bytes()}})
	if err := putDoc(ctx, s.chunkColl(), key, chunk); err != nil {
		return fmt.Errorf("mongostore: broadcast chunk %d: %w", index, err)
	}
	result := append(head[:3:3],
		bson.E{Key: "candidates", Value: ids},
		bson.E{Key: "successful", Value: bson.A{}},
		bson.E{Key: "failed", Value: bson.A{}},
		bson.E{Key: "skipped", Value: bson.A{}},
		bson.E{Key: "complete", Value: false},
	)
	if err := putDoc(ctx, s.resultColl(), key, result); err != nil {
		return fmt.Errorf("mongostore: broadcast results %d: %w", index, err)
	}
	return nil
}

// putDoc inserts doc, or replaces the document with its _id (a plan
// written again): an insert is a fraction of an upsert's cost on FerretDB.
func putDoc(ctx context.Context, coll *mongo.Collection, key string, doc bson.D) error {
	_, err := coll.InsertOne(ctx, doc)
	if err == nil || !errors.Is(mapErr(err), notify.ErrDuplicate) {
		return err
	}
	_, err = coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: key}}, doc)
	return err
}

// deleteChunksFrom deletes the snapshots and results of a broadcast from
// index on, up to the first index that has neither, and returns how many
// documents went.
func (s *Store) deleteChunksFrom(ctx context.Context, nid notify.ID, index int) (int64, error) {
	var total int64
	for i := index; ; i++ {
		key := bson.D{{Key: "_id", Value: chunkKey(nid, i)}}
		a, err := s.chunkColl().DeleteOne(ctx, key)
		if err != nil {
			return total, fmt.Errorf("mongostore: broadcast chunk %d: %w", i, err)
		}
		b, err := s.resultColl().DeleteOne(ctx, key)
		if err != nil {
			return total, fmt.Errorf("mongostore: broadcast results %d: %w", i, err)
		}
		if a.DeletedCount+b.DeletedCount == 0 {
			return total, nil
		}
		total += a.DeletedCount + b.DeletedCount
		for part := 0; ; part++ {
			p, err := s.resultColl().DeleteOne(ctx, bson.D{{Key: "_id", Value: chunkKey(nid, i) + "/" + strconv.Itoa(part)}})
			if err != nil {
				return total, fmt.Errorf("mongostore: broadcast results %d: %w", i, err)
			}
			if p.DeletedCount == 0 {
				break
			}
			total += p.DeletedCount
		}
	}
}

// DeleteBroadcastSnapshots deletes the subscription snapshots of chunks
// 0..chunks-1, which a finished broadcast no longer needs.
func (s *Store) DeleteBroadcastSnapshots(ctx context.Context, nid notify.ID, chunks int) error {
	for i := 0; i < chunks; i++ {
		if _, err := s.chunkColl().DeleteOne(ctx, bson.D{{Key: "_id", Value: chunkKey(nid, i)}}); err != nil {
			return fmt.Errorf("mongostore: broadcast chunk %d: %w", i, err)
		}
	}
	return nil
}

// BroadcastChunk returns the subscriptions of one chunk as they were when
// the broadcast was planned (the snapshot fields only), or
// notify.ErrNotFound.
func (s *Store) BroadcastChunk(ctx context.Context, nid notify.ID, index int) ([]*notify.Subscription, error) {
	raw, err := s.chunkColl().FindOne(ctx, bson.D{{Key: "_id", Value: chunkKey(nid, index)}}).Raw()
	if err != nil {
		return nil, fmt.Errorf("mongostore: broadcast chunk %d: %w", index, mapErr(err))
	}
	_, z, ok := raw.Lookup("subscriptions").BinaryOK()
	if !ok {
		return nil, fmt.Errorf("mongostore: broadcast chunk %d: no subscriptions", index)
	}
	count, _ := raw.Lookup("count").Int32OK()
	snap, err := io.ReadAll(flate.NewReader(bytes.NewReader(z)))
	if err != nil {
		return nil, fmt.Errorf("mongostore: broadcast chunk %d: %w", index, err)
	}
	subs := s.Subscriptions()
	out := make([]*notify.Subscription, 0, count)
	for len(snap) > 0 {
		doc, rest, ok := bsoncore.ReadDocument(snap)
		if !ok {
			return nil, fmt.Errorf("mongostore: broadcast chunk %d: damaged snapshot", index)
		}
		snap = rest
		sub, err := subs.decode(bson.Raw(doc), false)
		if err != nil {
			return nil, err
		}
		out = append(out, sub)
	}
	return out, nil
}

// ChunkResults are the recorded results of one chunk.
type ChunkResults struct {
	Candidates []string
	Successful []string
	Failed     []notify.DispatchFailure
	Skipped    []string
	Complete   bool
	// Parts counts the partial documents read (the next part number).
	Parts int
}

// Outcomes returns the recorded outcome of each subscriber that has one.
func (c *ChunkResults) Outcomes() map[string]notify.DispatchOutcome {
	m := make(map[string]notify.DispatchOutcome, len(c.Successful)+len(c.Failed)+len(c.Skipped))
	for _, id := range c.Skipped {
		m[id] = notify.DispatchSkipped
	}
	for _, f := range c.Failed {
		m[f.SubscriptionID] = notify.DispatchFailed
	}
	for _, id := range c.Successful {
		m[id] = notify.DispatchSuccessful
	}
	return m
}

// BroadcastResults returns the results of one chunk, or
// notify.ErrNotFound: the chunk's result document and, until the chunk is
// complete, its partial documents.
func (s *Store) BroadcastResults(ctx context.Context, nid notify.ID, index int) (*ChunkResults, error) {
	key := chunkKey(nid, index)
	raw, err := s.resultColl().FindOne(ctx, bson.D{{Key: "_id", Value: key}}).Raw()
	if err != nil {
		return nil, fmt.Errorf("mongostore: broadcast results %d: %w", index, mapErr(err))
	}
	r := &ChunkResults{}
	if err := r.add(raw); err != nil {
		return nil, fmt.Errorf("mongostore: broadcast results %d: %w", index, err)
	}
	if r.Complete {
		return r, nil
	}
	for ; ; r.Parts++ {
		raw, err := s.resultColl().FindOne(ctx, bson.D{{Key: "_id", Value: key + "/" + strconv.Itoa(r.Parts)}}).Raw()
		if errors.Is(err, mongo.ErrNoDocuments) {
			return r, nil
		}
		if err != nil {
			return nil, fmt.Errorf("mongostore: broadcast results %d: %w", index, err)
		}
		if err := r.add(raw); err != nil {
			return nil, fmt.Errorf("mongostore: broadcast results %d: %w", index, err)
		}
	}
}

// add reads a result document into r.
func (r *ChunkResults) add(raw bson.Raw) error {
	f, err := rawDoc(raw)
	if err != nil {
		return err
	}
	strs := func(key string) []string {
		arr, _ := f.Get(key)
		list, _ := arr.([]any)
		out := make([]string, 0, len(list))
		for _, v := range list {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	r.Candidates = append(r.Candidates, strs("candidates")...)
	r.Successful = append(r.Successful, strs("successful")...)
	r.Skipped = append(r.Skipped, strs("skipped")...)
	if arr, ok := f.Get("failed"); ok {
		list, _ := arr.([]any)
		for _, v := range list {
			item, ok := v.(notify.Fields)
			if !ok {
				continue
			}
			var df notify.DispatchFailure
			df.SubscriptionID, _ = item.String("subscriptionId")
			df.UserChannelID, _ = item.String("userChannelId")
			df.Error, _ = item.Get("error")
			r.Failed = append(r.Failed, df)
		}
	}
	if v, _ := f.Get("complete"); v == true {
		r.Complete = true
	}
	return nil
}

// outcomeLists splits results into the three stored lists.
func outcomeLists(results []notify.DispatchResult) (succ, fail, skip bson.A, err error) {
	succ, fail, skip = bson.A{}, bson.A{}, bson.A{}
	for _, r := range results {
		switch r.Outcome {
		case notify.DispatchSuccessful:
			succ = append(succ, r.SubscriptionID)
		case notify.DispatchSkipped:
			skip = append(skip, r.SubscriptionID)
		case notify.DispatchFailed:
			fail = append(fail, failureDoc(notify.DispatchFailure{SubscriptionID: r.SubscriptionID, UserChannelID: r.UserChannelID, Error: r.Error}))
		default:
			return nil, nil, nil, fmt.Errorf("mongostore: dispatch result for %s: outcome %q is not final", r.SubscriptionID, r.Outcome)
		}
	}
	return succ, fail, skip, nil
}

func failureDoc(f notify.DispatchFailure) bson.D {
	d := bson.D{{Key: "subscriptionId", Value: f.SubscriptionID}}
	if f.UserChannelID != "" {
		d = append(d, bson.E{Key: "userChannelId", Value: f.UserChannelID})
	}
	if f.Error != nil {
		d = append(d, bson.E{Key: "error", Value: toBSON(f.Error)})
	}
	return d
}

// RecordChunk stores a batch of outcomes of a chunk as its partial
// document part, or the next free number after it (another worker took
// that one), and returns the number to use next. Outcomes must be final.
// The caller records each subscriber once; readers keep a subscriber's
// first outcome should one be recorded twice.
func (s *Store) RecordChunk(ctx context.Context, nid notify.ID, index, part int, results []notify.DispatchResult) (int, error) {
	succ, fail, skip, err := outcomeLists(results)
	if err != nil {
		return part, err
	}
	for {
		doc := bson.D{
			{Key: "_id", Value: chunkKey(nid, index) + "/" + strconv.Itoa(part)},
			{Key: "successful", Value: succ},
			{Key: "failed", Value: fail},
			{Key: "skipped", Value: skip},
		}
		_, err := s.resultColl().InsertOne(ctx, doc)
		if err == nil {
			return part + 1, nil
		}
		if !errors.Is(mapErr(err), notify.ErrDuplicate) {
			return part, fmt.Errorf("mongostore: broadcast results %d: %w", index, err)
		}
		part++
	}
}

// CompleteChunk folds a chunk's results r (as BroadcastResults returned
// them, plus the outcomes recorded since) into its result document, marks
// it complete and deletes the partial documents.
func (s *Store) CompleteChunk(ctx context.Context, nid notify.ID, index int, r *ChunkResults) error {
	key := chunkKey(nid, index)
	fail := bson.A{}
	for _, f := range r.Failed {
		fail = append(fail, failureDoc(f))
	}
	strs := func(l []string) bson.A {
		a := make(bson.A, len(l))
		for i, x := range l {
			a[i] = x
		}
		return a
	}
	doc := bson.D{
		{Key: "_id", Value: key},
		{Key: "notificationId", Value: bson.ObjectID(nid)},
		{Key: "index", Value: int32(index)},
		{Key: "candidates", Value: strs(r.Candidates)},
		{Key: "successful", Value: strs(r.Successful)},
		{Key: "failed", Value: fail},
		{Key: "skipped", Value: strs(r.Skipped)},
		{Key: "complete", Value: true},
		// the counts, so that progress is read without the lists
		// (BroadcastProgress)
		{Key: "counts", Value: countsDoc(CountChunk(r))},
	}
	if _, err := s.resultColl().ReplaceOne(ctx, bson.D{{Key: "_id", Value: key}}, doc); err != nil {
		return fmt.Errorf("mongostore: broadcast results %d: %w", index, err)
	}
	for part := 0; ; part++ {
		res, err := s.resultColl().DeleteOne(ctx, bson.D{{Key: "_id", Value: key + "/" + strconv.Itoa(part)}})
		if err != nil {
			return fmt.Errorf("mongostore: broadcast results %d: %w", index, err)
		}
		if res.DeletedCount == 0 && part >= r.Parts {
			return nil
		}
	}
}

// eachChunkResults calls fn with the results of chunk 0, 1, … of a
// broadcast, up to the first that is missing.
func (s *Store) eachChunkResults(ctx context.Context, nid notify.ID, fn func(*ChunkResults)) error {
	for i := 0; ; i++ {
		r, err := s.BroadcastResults(ctx, nid, i)
		if errors.Is(err, notify.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		fn(r)
	}
}

// DispatchCounts counts a broadcast's candidates and recorded results (the
// side collections only; arrays inline in older documents are not
// counted). Pending is candidates minus results.
func (s *Store) DispatchCounts(ctx context.Context, nid notify.ID) (notify.DispatchCounts, error) {
	var c notify.DispatchCounts
	err := s.eachChunkResults(ctx, nid, func(r *ChunkResults) {
		c.Candidates += int64(len(r.Candidates))
		n := newOutcomeSet(r)
		c.Successful += n.succ
		c.Failed += n.fail
		c.Skipped += n.skip
	})
	c.Pending = max(0, c.Candidates-c.Successful-c.Failed-c.Skipped)
	return c, err
}

type outcomeCounts struct{ succ, fail, skip int64 }

// newOutcomeSet counts a chunk's results, each subscriber once (its first
// outcome).
func newOutcomeSet(r *ChunkResults) outcomeCounts {
	seen := make(map[string]bool, len(r.Successful)+len(r.Failed)+len(r.Skipped))
	var n outcomeCounts
	for _, id := range r.Successful {
		if !seen[id] {
			seen[id] = true
			n.succ++
		}
	}
	for _, f := range r.Failed {
		if !seen[f.SubscriptionID] {
			seen[f.SubscriptionID] = true
			n.fail++
		}
	}
	for _, id := range r.Skipped {
		if !seen[id] {
			seen[id] = true
			n.skip++
		}
	}
	return n
}

// LoadDispatch fills n.Dispatch for the API: the arrays an older document
// holds inline (written by the original, or given by a client) merged
// with the side collections, each subscriber once in each list, each list
// cut at the store's DispatchListLimit, and dispatch.counts with the full
// counts. A notification with nothing recorded keeps a nil Dispatch; only
// broadcasts are looked up. Other inline keys (such as req) are kept.
func (s *Store) LoadDispatch(ctx context.Context, n *notify.Notification) error {
	if n == nil || !n.IsBroadcast || n.ID.IsZero() {
		return nil
	}
	v := newDispatchView(n.Dispatch, s.listLimit)
	found := false
	err := s.eachChunkResults(ctx, n.ID, func(r *ChunkResults) {
		found = true
		v.add(r)
	})
	if err != nil {
		return err
	}
	if found {
		n.Dispatch = v.done()
	}
	return nil
}

// LoadDispatchAll is LoadDispatch for a page of notifications.
func (s *Store) LoadDispatchAll(ctx context.Context, ns []*notify.Notification) error {
	for _, n := range ns {
		if err := s.LoadDispatch(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// dispatchView merges results into the API's dispatch lists within a
// bound, counting all of them. Chunks hold disjoint sets of subscribers,
// so only what a chunk repeats of itself (a batch recorded twice) or of
// the arrays the original stored inline can be a duplicate: the view
// remembers the inline subscribers and one chunk's at a time, never the
// whole broadcast.
type dispatchView struct {
	d      *notify.Dispatch
	limit  int
	counts notify.DispatchCounts
	// inline candidates and decided subscribers (with an outcome), from
	// the notification document
	inlineCand, inlineDecided map[string]bool
	decided                   map[string]bool // of the chunk being added
}

func newDispatchView(inline *notify.Dispatch, limit int) *dispatchView {
	d := &notify.Dispatch{}
	v := &dispatchView{d: d, limit: limit}
	if inline == nil {
		return v
	}
	d.Extra = inline.Extra
	v.add(&ChunkResults{Candidates: inline.Candidates, Successful: inline.Successful, Failed: inline.Failed, Skipped: inline.Skipped})
	v.inlineCand = make(map[string]bool, len(inline.Candidates))
	for _, id := range inline.Candidates {
		v.inlineCand[id] = true
	}
	v.inlineDecided = v.decided
	return v
}

// add merges one chunk's results (or the inline arrays).
func (v *dispatchView) add(r *ChunkResults) {
	v.decided = make(map[string]bool, len(r.Successful)+len(r.Failed)+len(r.Skipped))
	seen := make(map[string]bool, len(r.Candidates))
	for _, id := range r.Candidates {
		if seen[id] || v.inlineCand[id] {
			continue
		}
		seen[id] = true
		v.counts.Candidates++
		if len(v.d.Candidates) < v.limit {
			v.d.Candidates = append(v.d.Candidates, id)
		}
	}
	for _, id := range r.Successful {
		if v.outcome(id) {
			v.counts.Successful++
			if len(v.d.Successful) < v.limit {
				v.d.Successful = append(v.d.Successful, id)
			}
		}
	}
	for _, f := range r.Failed {
		if v.outcome(f.SubscriptionID) {
			v.counts.Failed++
			if len(v.d.Failed) < v.limit {
				v.d.Failed = append(v.d.Failed, f)
			}
		}
	}
	for _, id := range r.Skipped {
		if v.outcome(id) {
			v.counts.Skipped++
			if len(v.d.Skipped) < v.limit {
				v.d.Skipped = append(v.d.Skipped, id)
			}
		}
	}
}

// outcome reports whether id's outcome is the first seen (and so listed).
func (v *dispatchView) outcome(id string) bool {
	if v.decided[id] || v.inlineDecided[id] {
		return false
	}
	v.decided[id] = true
	return true
}

func (v *dispatchView) done() *notify.Dispatch {
	d := v.d
	if d.Candidates == nil {
		d.Candidates = []string{}
	}
	if d.Successful == nil {
		d.Successful = []string{}
	}
	if d.Failed == nil {
		d.Failed = []notify.DispatchFailure{}
	}
	if d.Skipped == nil {
		d.Skipped = []string{}
	}
	c := v.counts
	c.Pending = max(0, c.Candidates-c.Successful-c.Failed-c.Skipped)
	d.Counts = &c
	return d
}

// DeleteDispatchOf is DeleteDispatch for several notifications (purged
// ones).
func (s *Store) DeleteDispatchOf(ctx context.Context, notificationIDs []notify.ID) (int64, error) {
	var total int64
	for _, id := range notificationIDs {
		n, err := s.DeleteDispatch(ctx, id)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// TouchBroadcast records that a broadcast is being worked on now (a
// chunk started, results were written).
func (s *Store) TouchBroadcast(ctx context.Context, nid notify.ID) error {
	_, err := s.broadcastColl().UpdateOne(ctx, bson.D{{Key: "_id", Value: bson.ObjectID(nid)}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "active", Value: bson.NewDateTimeFromTime(s.now())}}}})
	if err != nil {
		return fmt.Errorf("mongostore: broadcast: %w", err)
	}
	return nil
}

// LastDispatchActivity returns when a broadcast was last worked on (zero
// when never): a broadcast whose chunks are being sent is alive even when
// its notification document has not changed for a while.
func (s *Store) LastDispatchActivity(ctx context.Context, nid notify.ID) (time.Time, error) {
	raw, err := s.broadcastColl().FindOne(ctx, bson.D{{Key: "_id", Value: bson.ObjectID(nid)}},
		options.FindOne().SetProjection(bson.D{{Key: "active", Value: 1}, {Key: "started", Value: 1}})).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("mongostore: broadcast: %w", err)
	}
	for _, k := range []string{"active", "started"} {
		if dt, ok := raw.Lookup(k).DateTimeOK(); ok {
			return time.UnixMilli(dt).UTC(), nil
		}
	}
	return time.Time{}, nil
}

// insertIgnoringDuplicates inserts docs unordered and returns how many were
// inserted; documents refused by a unique index are already there and are
// not an error. Any other error is returned.
func insertIgnoringDuplicates(ctx context.Context, coll *mongo.Collection, docs []any) (int64, error) {
	if len(docs) == 0 {
		return 0, nil
	}
	_, err := coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	if err == nil {
		return int64(len(docs)), nil
	}
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil {
		return 0, err
	}
	for _, we := range bwe.WriteErrors {
		if we.Code != 11000 {
			return 0, err
		}
	}
	return int64(len(docs) - len(bwe.WriteErrors)), nil
}

// DeleteDispatch removes everything a notification's broadcast keeps
// outside the notification (when it is purged, or sent afresh) and returns
// how many documents went.
func (s *Store) DeleteDispatch(ctx context.Context, nid notify.ID) (int64, error) {
	n, err := s.deleteChunksFrom(ctx, nid, 0)
	if err != nil {
		return n, err
	}
	res, err := s.broadcastColl().DeleteOne(ctx, bson.D{{Key: "_id", Value: bson.ObjectID(nid)}})
	if err != nil {
		return n, fmt.Errorf("mongostore: broadcast: %w", err)
	}
	return n + res.DeletedCount, nil
}

// KeepFirstOutcomes drops every outcome of a subscriber but the first
// (successful, then failed, then skipped, as readers take them), so that
// a batch stored twice — a write whose reply was lost, written again —
// counts once when the chunk is completed.
func (c *ChunkResults) KeepFirstOutcomes() {
	seen := make(map[string]bool, len(c.Successful)+len(c.Failed)+len(c.Skipped))
	first := func(id string) bool {
		if seen[id] {
			return false
		}
		seen[id] = true
		return true
	}
	c.Successful = slices.DeleteFunc(c.Successful, func(id string) bool { return !first(id) })
	c.Failed = slices.DeleteFunc(c.Failed, func(f notify.DispatchFailure) bool { return !first(f.SubscriptionID) })
	c.Skipped = slices.DeleteFunc(c.Skipped, func(id string) bool { return !first(id) })
}
