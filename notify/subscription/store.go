package subscription

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify/mongostore"
)

func queryName(name string) mongostore.Query {
	return mongostore.Query{Filter: bson.D{{Key: "name", Value: name}}}
}
