package httpapi

// resourceRoutes declares the routes of the group-scoped resources, each
// with its access level beside its handler, as routeTable does for auth.
func (s *Server) resourceRoutes() []Route {
	return nil
}
