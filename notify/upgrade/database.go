package upgrade

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/connstring"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"
)

// dbFacts is what the database part of a step found, for the checklist.
type dbFacts struct {
	checked       bool
	problems      int
	serverVersion string
	replicaSet    string // hello.setName; empty when not a replica set member
	fcv           string // feature compatibility version; empty when not reported
	collisions    [][]string
}

func databaseName(uri string) (string, error) {
	cs, err := connstring.ParseAndValidate(uri)
	if err != nil {
		return "", fmt.Errorf("--database: %v", err)
	}
	if cs.Database == "" {
		return "", errors.New("--database: the URI must name the database, e.g. mongodb://host:27017/notifyBC")
	}
	return cs.Database, nil
}

// The mongosh commands equal to what the tool does, printed when the
// server cannot run them through the driver.
const (
	shellRenameDispatches = `db.notification.updateMany(
  { $or: [ { failedDispatches: { $exists: true } }, { successDispatches: { $exists: true } } ] },
  { $rename: { failedDispatches: "dispatch.failed", successDispatches: "dispatch.successful" } }
)`
	shellEmailCollisions = `db.administrator.aggregate([
  { $group: { _id: { $toLower: "$email" }, emails: { $push: "$email" }, n: { $sum: 1 } } },
  { $match: { n: { $gt: 1 } } }
])`
	shellFCV = `db.adminCommand({ getParameter: 1, featureCompatibilityVersion: 1 })
db.adminCommand({ setFeatureCompatibilityVersion: "7.0", confirm: true })  // on MongoDB 7, before moving to 8`
)

// databaseStep performs the data changes and checks of a step.
func databaseStep(ctx context.Context, o Options, from int, out io.Writer) (dbFacts, error) {
	var facts dbFacts
	name, err := databaseName(o.Database)
	if err != nil {
		return facts, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	client, err := mongo.Connect(options.Client().ApplyURI(o.Database).SetServerSelectionTimeout(15 * time.Second))
	if err != nil {
		return facts, fmt.Errorf("--database: %v", err)
	}
	defer client.Disconnect(context.Background())
	db := client.Database(name)

	var hello bson.M
	if err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err != nil {
		if serverTooOld(err) {
			fmt.Fprintf(out, "\nDatabase %s: the server is older than the MongoDB driver supports (MongoDB %s or later); run in mongosh instead:\n%s\n",
				name, topology.MinSupportedMongoDBVersion, indentBlock(shellCommands(from)))
			return facts, nil
		}
		return facts, fmt.Errorf("--database: cannot reach the server: %v", err)
	}
	facts.checked = true
	if s, ok := hello["setName"].(string); ok {
		facts.replicaSet = s
	}
	var build bson.M
	if err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&build); err == nil {
		facts.serverVersion, _ = build["version"].(string)
	}
	fmt.Fprintf(out, "\nDatabase %s (server %s):\n", name, orUnknown(facts.serverVersion))

	switch from {
	case 2:
		err = renameDispatches(ctx, db, o.DryRun, out)
	case 4:
		err = emailCollisions(ctx, db, &facts, out)
	case 5:
		err = checkFCV(ctx, client, &facts, out)
	default:
		fmt.Fprintln(out, "  this step has no data changes")
	}
	return facts, err
}

func orUnknown(s string) string {
	if s == "" {
		return "version unknown"
	}
	return s
}

// unsupported reports whether the server refused a command it does not
// implement, as opposed to a failure of the data or the connection.
func unsupported(err error) bool {
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		// CommandNotFound, IllegalOperation, NotImplemented, InvalidOptions, FailedToParse
		switch ce.Code {
		case 59, 20, 238, 72, 9, 115:
			return true
		}
	}
	var we mongo.WriteException
	if errors.As(err, &we) && we.WriteConcernError == nil {
		for _, e := range we.WriteErrors {
			switch e.Code {
			case 20, 238, 9, 115:
				return true
			}
		}
	}
	return false
}

func renameDispatches(ctx context.Context, db *mongo.Database, dry bool, out io.Writer) error {
	coll := db.Collection("notification")
	filter := bson.D{{Key: "$or", Value: bson.A{
		bson.D{{Key: "failedDispatches", Value: bson.D{{Key: "$exists", Value: true}}}},
		bson.D{{Key: "successDispatches", Value: bson.D{{Key: "$exists", Value: true}}}},
	}}}
	n, err := coll.CountDocuments(ctx, filter)
	if err != nil {
		if unsupported(err) {
			fmt.Fprintf(out, "  the server cannot count the notifications to rename (%v); run in mongosh:\n%s\n", err, indentBlock(shellRenameDispatches))
			return nil
		}
		return fmt.Errorf("--database: counting notifications: %v", err)
	}
	if n == 0 {
		fmt.Fprintln(out, "  notifications: no failedDispatches/successDispatches fields left: nothing to rename")
		return nil
	}
	if dry {
		fmt.Fprintf(out, "  notifications: %d would have failedDispatches → dispatch.failed and successDispatches → dispatch.successful (dry run: not changed)\n", n)
		return nil
	}
	res, err := coll.UpdateMany(ctx, filter, bson.D{{Key: "$rename", Value: bson.D{
		{Key: "failedDispatches", Value: "dispatch.failed"},
		{Key: "successDispatches", Value: "dispatch.successful"},
	}}})
	if err != nil {
		if unsupported(err) {
			fmt.Fprintf(out, "  the server cannot rename fields (%v); run in mongosh:\n%s\n", err, indentBlock(shellRenameDispatches))
			return nil
		}
		return fmt.Errorf("--database: renaming notification fields: %v", err)
	}
	fmt.Fprintf(out, "  notifications: renamed failedDispatches → dispatch.failed and successDispatches → dispatch.successful in %d document(s)\n", res.ModifiedCount)
	return nil
}

// emailCollisions finds administrators whose emails differ only by case;
// v5 makes the email unique case-insensitively.
func emailCollisions(ctx context.Context, db *mongo.Database, facts *dbFacts, out io.Writer) error {
	cur, err := db.Collection("administrator").Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "email", Value: 1}}))
	if err != nil {
		if unsupported(err) {
			fmt.Fprintf(out, "  the server cannot list administrators (%v); run in mongosh:\n%s\n", err, indentBlock(shellEmailCollisions))
			return nil
		}
		return fmt.Errorf("--database: reading administrators: %v", err)
	}
	defer cur.Close(ctx)
	groups := map[string][]string{}
	for cur.Next(ctx) {
		var a struct {
			ID    any    `bson:"_id"`
			Email string `bson:"email"`
		}
		if err := cur.Decode(&a); err != nil {
			return fmt.Errorf("--database: reading administrators: %v", err)
		}
		k := strings.ToLower(a.Email)
		groups[k] = append(groups[k], fmt.Sprintf("%s (id %s)", a.Email, idString(a.ID)))
	}
	if err := cur.Err(); err != nil {
		return fmt.Errorf("--database: reading administrators: %v", err)
	}
	keys := make([]string, 0, len(groups))
	for k, g := range groups {
		if len(g) > 1 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		sort.Strings(groups[k])
		facts.collisions = append(facts.collisions, groups[k])
	}
	if len(keys) == 0 {
		fmt.Fprintln(out, "  administrators: no emails that differ only by case")
		return nil
	}
	facts.problems++
	fmt.Fprintf(out, "  administrators: %d email(s) are used more than once when case is ignored; v5 refuses them:\n", len(keys))
	for _, k := range keys {
		fmt.Fprintf(out, "    %s\n", strings.Join(groups[k], ", "))
	}
	return nil
}

func idString(id any) string {
	if oid, ok := id.(bson.ObjectID); ok {
		return oid.Hex()
	}
	return fmt.Sprint(id)
}

// checkFCV reads the feature compatibility version. MongoDB 8 starts only
// on data whose FCV is 7.0, so a MongoDB 7 server must report 7.0 before
// the database moves to 8.
func checkFCV(ctx context.Context, client *mongo.Client, facts *dbFacts, out io.Writer) error {
	var res bson.M
	err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1}, {Key: "featureCompatibilityVersion", Value: 1}}).Decode(&res)
	if err != nil {
		if unsupported(err) {
			fmt.Fprintf(out, "  the server does not report a feature compatibility version (%v); on MongoDB run in mongosh:\n%s\n", err, indentBlock(shellFCV))
			return nil
		}
		return fmt.Errorf("--database: reading the feature compatibility version: %v", err)
	}
	switch doc := res["featureCompatibilityVersion"].(type) {
	case bson.D:
		for _, e := range doc {
			if e.Key == "version" {
				facts.fcv, _ = e.Value.(string)
			}
		}
	case bson.M:
		facts.fcv, _ = doc["version"].(string)
	}
	if facts.fcv == "" {
		fmt.Fprintf(out, "  the server does not report a feature compatibility version; on MongoDB run in mongosh:\n%s\n", indentBlock(shellFCV))
		return nil
	}
	msg, ok := fcvVerdict(facts.serverVersion, facts.fcv)
	if !ok {
		facts.problems++
	}
	fmt.Fprintf(out, "  feature compatibility version %s: %s\n", facts.fcv, msg)
	return nil
}

// fcvVerdict judges a server version and feature compatibility version
// against the move to MongoDB 8 that v6's chart makes.
func fcvVerdict(serverVersion, fcv string) (string, bool) {
	major := func(v string) int {
		n, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
		return n
	}
	sv, fv := major(serverVersion), fcv
	switch {
	case sv >= 8:
		return "the server already runs MongoDB " + serverVersion, true
	case fv == "7.0":
		return "ready for MongoDB 8", true
	case sv == 7:
		return `must be 7.0 before the server moves to MongoDB 8: run db.adminCommand({ setFeatureCompatibilityVersion: "7.0", confirm: true })`, false
	case sv > 0:
		return fmt.Sprintf("the server runs MongoDB %s: upgrade it to 7.0 and set the feature compatibility version to 7.0 before moving to MongoDB 8", serverVersion), false
	}
	return "must be 7.0 before the server moves to MongoDB 8", fv == "7.0"
}

func indentBlock(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// serverTooOld reports whether the driver refused the server for its wire
// version (a MongoDB older than the driver supports).
func serverTooOld(err error) bool {
	var sse topology.ServerSelectionError
	if errors.As(err, &sse) && sse.Desc.CompatibilityErr != nil {
		return true
	}
	return strings.Contains(err.Error(), "wire version")
}

// shellCommands are the mongosh commands of a step's database work.
func shellCommands(from int) string {
	switch from {
	case 2:
		return shellRenameDispatches
	case 4:
		return shellEmailCollisions
	case 5:
		return shellFCV
	}
	return "// this step has no data changes"
}
