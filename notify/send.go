package notify

import "context"

type sendStartKey struct{}

// OnSendStart returns a context whose sends call fn at the moment a message
// is about to leave for its recipient: after any waiting (for a throttle, a
// pooled connection), before the first byte that could deliver it. If fn
// fails, the message is not sent and the send fails with fn's error. A
// broadcast marks a subscriber's send as begun this way, so that after a
// crash it knows exactly whose mail may have gone.
func OnSendStart(ctx context.Context, fn func() error) context.Context {
	return context.WithValue(ctx, sendStartKey{}, fn)
}

// SendStarting is what senders call at that moment (once per message): it
// runs the function OnSendStart put in ctx, if any.
func SendStarting(ctx context.Context) error {
	if fn, ok := ctx.Value(sendStartKey{}).(func() error); ok {
		return fn()
	}
	return nil
}
