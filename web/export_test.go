package web

// RawRoutes are the routes, by name, whose bodies stream through their
// handlers unread by the middleware (rawRoutes), for the input sweep.
var RawRoutes = rawRoutes
