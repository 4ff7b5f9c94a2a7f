package mongostore

// LookupsAnswered counts the queries answered from a field index (its
// candidates or its own queries), so tests can tell that the index path
// ran.
func LookupsAnswered() int64 { return lookupsAnswered.Load() + indexAnswered.Load() }

// IndexAnswered counts the queries answered by the field index's own
// queries (lists, counts).
func IndexAnswered() int64 { return indexAnswered.Load() }
