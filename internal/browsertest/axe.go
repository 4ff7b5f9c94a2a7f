package browsertest

import (
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/govkit/govkit/internal/testsvc"
)

// The sizes every page is checked at: a laptop and a phone.
var axeSizes = []struct{ w, h int64 }{{1280, 800}, {390, 844}}

var (
	axeMu     sync.Mutex
	axeSource string
)

// axeRun runs axe-core on the page: the WCAG 2.0-2.2 A and AA rules, the
// best practices and the experimental rules (label-content-name-mismatch,
// WCAG 2.5.3, is one), and returns the violations of impact serious or
// critical, one line each, plus whether the document scrolls sideways.
const axeRun = `(async () => {
  const r = await axe.run(document, {
    runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22a", "wcag22aa", "best-practice", "experimental"]},
    resultTypes: ["violations"],
  });
  const out = [];
  for (const v of r.violations) {
    if (v.impact !== "serious" && v.impact !== "critical") continue;
    for (const n of v.nodes) out.push(v.id + " (" + v.impact + "): " + n.target.join(" ") + ": " + n.failureSummary.replace(/\s+/g, " "));
  }
  const wide = document.documentElement.scrollWidth - document.documentElement.clientWidth;
  if (wide > 0) {
    // The innermost elements past the right edge are the ones to fix.
    const past = (e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1 || e.scrollWidth > document.documentElement.clientWidth + 1;
    const culprits = [...document.querySelectorAll("body *")].filter(e => past(e) && ![...e.children].some(past))
      .slice(0, 4).map(e => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className && typeof e.className === "string" ? "." + e.className.trim().split(/\s+/).join(".") : "") +
        " in " + (e.parentElement ? e.parentElement.tagName.toLowerCase() + "." + String(e.parentElement.className).trim().split(/\s+/).join(".") : "") + " (" + Math.round(e.getBoundingClientRect().right) + " px)");
    out.push("reflow: the page scrolls sideways by " + wide + " px (" + culprits.join(", ") + ")");
  }
  return out;
})()`

// Accessible checks the page as it is now at 1280×800 and at 390×844 with
// axe-core (pinned in ui/package-lock.json) and fails the test for every
// violation of impact serious or critical, and for a page that scrolls
// sideways at either width. what names the page in the failure. The tab is
// left at the size it had when the test made it.
func (b *Tab) Accessible(what string) {
	b.T.Helper()
	src := loadAxe(b.T)
	if !Eval[bool](b, `typeof axe !== "undefined"`) {
		if _, err := chromedp.Run(b.Ctx, chromedp.Evaluate[any](src+";null")); err != nil {
			b.T.Fatalf("loading axe-core: %v", err)
		}
	}
	for _, s := range axeSizes {
		b.resize(s.w, s.h)
		// The layout of the new size is done once two frames have passed.
		if _, err := chromedp.Run(b.Ctx, chromedp.Evaluate[bool](`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, chromedp.EvalAwaitPromise)); err != nil {
			b.T.Fatal(err)
		}
		found, err := chromedp.Run(b.Ctx, chromedp.Evaluate[[]string](axeRun, chromedp.EvalAwaitPromise))
		if err != nil {
			b.T.Fatalf("axe on %s: %v", what, err)
		}
		if len(found) > 0 {
			b.T.Errorf("%s at %d×%d:\n  %s", what, s.w, s.h, strings.Join(found, "\n  "))
		}
	}
	if b.width < 500 {
		b.resize(int64(b.width), int64(b.height))
	} else {
		b.resize(0, 0)
	}
}

// loadAxe returns axe-core's source, read once. RequireAxe skips the test
// (runtime.Goexit) when axe-core is not installed, so the lock is released
// by a defer: held past a skip, it would hang every later test.
func loadAxe(t *testing.T) string {
	t.Helper()
	axeMu.Lock()
	defer axeMu.Unlock()
	if axeSource == "" {
		axeSource = testsvc.RequireAxe(t)
	}
	return axeSource
}

// resize emulates a viewport: a phone's (touch, mobile) below 500 px; 0
// wide is the window's own.
func (b *Tab) resize(w, h int64) {
	b.T.Helper()
	if w == 0 {
		if _, err := chromedp.Call(b.Ctx, emulation.ClearDeviceMetricsOverride, cdp.Empty{}); err != nil {
			b.T.Fatal(err)
		}
		return
	}
	var opts []chromedp.EmulateViewportOption
	if w < 500 {
		opts = append(opts, chromedp.EmulateMobile)
	}
	if err := chromedp.Do(b.Ctx, chromedp.EmulateViewport(w, h, opts...)); err != nil {
		b.T.Fatalf("viewport %d×%d: %v", w, h, err)
	}
}
