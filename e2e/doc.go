// Package e2e holds end-to-end tests of the retail module that need
// dependencies the module itself does without: the page middleware under
// the chi and gin routers, and the example shop driven in headless
// Chromium through chromedp. It is a module of its own so that the
// retail module's go.mod stays free of them.
package e2e
