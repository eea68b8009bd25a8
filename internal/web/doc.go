// Package web is knee ui: the page, its embedded assets (plain ES modules
// and a vendored uPlot, no build step), a JSON API over the simulator, the
// lab and the run database, and live events over Server-Sent Events. The CLI
// only builds a Config and serves Server.
//
// Reading order: server.go (routes, the Host/Origin/token guard, errors as
// 400 with a message), simapi.go (one simulated run for the simulator page
// and the lifecycle view), pressure.go (the service-pressure badge),
// sweepapi.go (the simulated sweep), labapi.go (lab scenarios and the worked
// pair), runsapi.go (stored runs, reports, compare, the live view of a run
// that another process is storing). The page: assets/index.html, then
// assets/app.js (the page registry) and one module per page;
// assets/engineview.js draws the engine's batch and follows one request
// (Simulator, Lifecycle, Learn), and assets/wasmworker.js runs the
// WebAssembly API off the page's thread in an exported copy.
package web
