// Package webshop is the example shop that command shop (examples/shop)
// serves: its handlers, catalog and templates, and [Run], which serves it
// with its workers. It is a package, not only a command, so that variants
// serve the same shop with more: the otel module's build adds
// OpenTelemetry metrics through an [Extension].
package webshop
