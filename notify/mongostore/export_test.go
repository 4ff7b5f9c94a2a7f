package mongostore

// LookupsAnswered counts the queries answered from a field index, so
// tests can tell that the index path ran.
func LookupsAnswered() int64 { return lookupsAnswered.Load() }
