package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Page is one tab, attached as a session of its own.
type Page struct {
	b       *Browser
	session string
}

// NewPage opens a blank tab with page events on.
func (b *Browser) NewPage(ctx context.Context) (*Page, error) {
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.Decode(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return nil, err
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.Decode(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		return nil, err
	}
	p := &Page{b: b, session: attached.SessionID}
	if _, err := p.Call(ctx, "Page.enable", nil); err != nil {
		return nil, err
	}
	return p, nil
}

// Call sends one command to the page's session.
func (p *Page) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return p.b.Call(ctx, p.session, method, params)
}

// Navigate opens url and waits for the page's load event. Events queued
// before it (a late load of an earlier page) are dropped first, so the load
// waited for is this one's.
func (p *Page) Navigate(ctx context.Context, url string) error {
	for drained := false; !drained; {
		select {
		case <-p.b.events:
		default:
			drained = true
		}
	}
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := p.b.Decode(ctx, p.session, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		return err
	}
	if nav.ErrorText != "" {
		return fmt.Errorf("navigate to %s: %s", url, nav.ErrorText)
	}
	for {
		select {
		case ev := <-p.b.events:
			if ev.SessionID == p.session && ev.Method == "Page.loadEventFired" {
				return nil
			}
		case <-ctx.Done():
			return fmt.Errorf("navigate to %s: no load event: %w", url, ctx.Err())
		}
	}
}

// Eval runs a JavaScript expression in the page, waits for the promise it
// returns, and decodes the value into out.
func (p *Page) Eval(ctx context.Context, expression string, out any) error {
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := p.b.Decode(ctx, p.session, "Runtime.evaluate", map[string]any{
		"expression": expression, "awaitPromise": true, "returnByValue": true}, &res); err != nil {
		return err
	}
	if e := res.ExceptionDetails; e != nil {
		return errors.New("page script threw: " + e.Text + " " + e.Exception.Description)
	}
	return json.Unmarshal(res.Result.Value, out)
}
