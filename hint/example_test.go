package hint_test

import (
	"context"
	"fmt"
	"time"

	"github.com/rwshard/rwshard/hint"
)

func ExamplePrimary() {
	ctx := hint.Primary(context.Background())
	h, ok := hint.FromContext(ctx)
	fmt.Println(h.Route, ok)
	// Output: primary true
}

func ExampleMaxLag() {
	ctx := hint.MaxLag(hint.Replica(context.Background()), 500*time.Millisecond)
	h, _ := hint.FromContext(ctx)
	fmt.Println(h.Route, h.MaxLag)
	// Output: replica 500ms
}

func ExampleParse() {
	for _, c := range []string{
		"rwshard:node=replica2",
		"SHARDINGSPHERE_HINT: WRITE_ROUTE_ONLY=true",
		"rwshard:primry",
		"an ordinary comment",
	} {
		h, ok, err := hint.Parse(c)
		fmt.Printf("%-44q ok=%v route=%s node=%q err=%v\n", c, ok, h.Route, h.Node, err)
	}
	// Output:
	// "rwshard:node=replica2"                      ok=true route=node node="replica2" err=<nil>
	// "SHARDINGSPHERE_HINT: WRITE_ROUTE_ONLY=true" ok=true route=primary node="" err=<nil>
	// "rwshard:primry"                             ok=true route=default node="" err=hint "rwshard:primry": unknown item: "primry"
	// "an ordinary comment"                        ok=false route=default node="" err=<nil>
}
