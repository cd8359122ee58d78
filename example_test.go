package retail_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/url"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
)

func Example() {
	ctx := context.Background()
	store, err := memory.New(memory.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	// At login: start a session under a new random token (retailhttp's
	// SessionManager makes one of 128 bits).
	if _, err := store.StartSession(ctx, "3f1c9a", "alice"); err != nil {
		log.Fatal(err)
	}
	// On every request: refresh the session, counting a view of the item.
	user, ok, err := store.RefreshSession(ctx, "3f1c9a", "itemX")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(user, ok)

	if err := store.AddToCart(ctx, "3f1c9a", "itemX", 2); err != nil {
		log.Fatal(err)
	}
	cart, err := store.Cart(ctx, "3f1c9a")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cart)

	// Output:
	// alice true
	// map[itemX:2]
}

func ExampleManualClock() {
	ctx := context.Background()
	clock := retail.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store, err := memory.New(memory.Options{Clock: clock})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	_ = store.SetPage(ctx, "GET shop.test/?item=itemX", []byte("<h1>itemX</h1>"), time.Minute)
	clock.Advance(time.Minute) // no sleeping: the page expires now
	_, ok, _ := store.Page(ctx, "GET shop.test/?item=itemX")
	fmt.Println("cached:", ok)

	// Output:
	// cached: false
}

func ExamplePageCache() {
	ctx := context.Background()
	store, err := memory.New(memory.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	pages, err := retail.NewPageCache(store, retail.PageCacheOptions{})
	if err != nil {
		log.Fatal(err)
	}

	_ = store.UpdateToken(ctx, "3f1c9a", "alice", "itemX") // itemX is now ranked
	u, _ := url.Parse("http://shop.test/?item=itemX")
	render := func(context.Context) ([]byte, error) { return []byte("<h1>itemX</h1>"), nil }
	for range 2 {
		body, hit, _ := pages.CacheRequest(ctx, u, render)
		fmt.Printf("%s hit=%v\n", body, hit)
	}

	// Output:
	// <h1>itemX</h1> hit=false
	// <h1>itemX</h1> hit=true
}

func ExampleInputError() {
	store, err := memory.New(memory.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	err = store.UpdateToken(context.Background(), "", "alice", "")
	var in *retail.InputError
	fmt.Println(errors.Is(err, retail.ErrInvalid), errors.As(err, &in) && in.Arg == "token")
	fmt.Println(err)

	// Output:
	// true true
	// retail: UpdateToken: invalid token: empty
}

func ExampleOpError() {
	store, err := memory.New(memory.Options{})
	if err != nil {
		log.Fatal(err)
	}
	store.Close()

	err = store.AddToCart(context.Background(), "3f1c9a77", "kettle", 1)
	var op *retail.OpError
	fmt.Println(errors.Is(err, retail.ErrClosed), errors.As(err, &op) && op.Op == "AddToCart")
	fmt.Println(err)

	// Output:
	// true true
	// retail: AddToCart(token "3f1c"…): store is closed
}
