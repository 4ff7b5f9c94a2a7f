package dispatch

import "context"

// testHook, when set, is called at named points of a broadcast's life
// ("plan:chunk-written:<index>" as the plan has queued a chunk, "finish", "chunk:<step>" as each step of a
// chunk's attempt begins), so that a test running nodes as processes can
// stop a node or a part at an exact point instead of after a guessed
// delay.
var testHook func(ctx context.Context, point string)

// SetTestHook installs fn as the test hook. Only tests call it: the
// process that runs a node for a test, before the node starts.
func SetTestHook(fn func(ctx context.Context, point string)) { testHook = fn }

func hook(ctx context.Context, point string) {
	if testHook != nil {
		testHook(ctx, point)
	}
}
