// Package browsertest opens knee's HTML report in a real headless browser
// (Debian's chromium, driven by chromedp) and checks that every chart drew,
// that the page logged no errors and fetched nothing, and keeps a
// screenshot as a test artifact. It holds only tests; the chromium
// dependency stays out of the packages that make reports.
//
// The test is skipped when chromium is absent, except in CI (CI=true),
// where .ci/run installs it and the test must run.
package browsertest
