package httpapi

import "time"

// ForgetConsoleCounts drops a server's cached console counts, so that its
// next stats call is a node's first (benchmarks of that first call).
func ForgetConsoleCounts(s *Server) {
	c := &s.stats
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at, c.ended, c.took, c.groups, c.more, c.bounce = time.Time{}, time.Time{}, 0, nil, false, nil
}
