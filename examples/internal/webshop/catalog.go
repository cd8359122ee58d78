package webshop

import "sort"

// item is a product of the shop, as its database row would hold it.
type item struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	About string `json:"about"`
	Cents int    `json:"cents"`
}

// catalog stands in for the shop's database: the rows the row cache
// refreshes, and the items a visitor may view.
type catalog map[string]item

func newCatalog() catalog {
	c := make(catalog)
	for _, it := range []item{
		{"kettle", "Electric kettle", "1.7 litres, boils in three minutes.", 2999},
		{"teapot", "Cast-iron teapot", "Keeps tea hot through a long chapter.", 3450},
		{"mug", "Stoneware mug", "Holds a generous 350 ml.", 899},
		{"grinder", "Burr coffee grinder", "Forty settings, from espresso to press.", 7900},
		{"press", "French press", "Eight cups, double-walled glass.", 2499},
		{"scale", "Kitchen scale", "To the gram, up to five kilos.", 1999},
		{"whisk", "Balloon whisk", "Stainless steel, 30 cm.", 699},
		{"skillet", "Cast-iron skillet", "26 cm, seasoned and ready.", 3999},
		{"knife", "Chef's knife", "20 cm, high-carbon steel.", 5900},
		{"board", "Oak cutting board", "End grain, kind to knife edges.", 4500},
		{"apron", "Canvas apron", "Adjustable strap, two pockets.", 1800},
		{"timer", "Mechanical timer", "Sixty minutes, one loud bell.", 1099},
		{"jar", "Storage jars", "Set of four, with clamp lids.", 2250},
		{"towel", "Linen tea towels", "Pack of three, stonewashed.", 1500},
		{"ladle", "Soup ladle", "Pours without dripping.", 950},
		{"sieve", "Fine sieve", "18 cm mesh, hooks over a bowl.", 1250},
	} {
		c[it.ID] = it
	}
	return c
}

// ids returns the catalog's item ids in name order.
func (c catalog) ids() []string {
	ids := make([]string, 0, len(c))
	for id := range c {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return c[ids[i]].Name < c[ids[j]].Name })
	return ids
}
