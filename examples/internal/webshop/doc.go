// Package webshop is the example shop that command shop (examples/shop)
// serves: its handlers, catalog and templates, and [Run], which serves it
// with its workers. The command adds its -metrics flag through an
// [Extension]; the shop lives in the retail module, so that its tests run
// with the module's.
package webshop
