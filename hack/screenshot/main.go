// Command screenshot takes a PNG of a single-page web app with headless
// Chromium through the DevTools protocol: unlike `chromium --screenshot`,
// which shoots at the load event (a blank page for the Temporal Web UI,
// which renders after it), it waits until the page shows the text asked
// for, then shoots.
//
//	go run ./hack/screenshot -out docs/x.png -wait-for 'Complete' URL
package main

import (
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/net/websocket"
)

func main() {
	out := flag.String("out", "screenshot.png", "PNG file to write")
	waitFor := flag.String("wait-for", "", "text the page must show before the picture is taken")
	width := flag.Int("width", 1400, "window width")
	height := flag.Int("height", 1000, "window height")
	timeout := flag.Duration("timeout", 60*time.Second, "how long to wait for the text")
	chromium := flag.String("chromium", "chromium", "Chromium binary")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: screenshot [flags] URL")
		os.Exit(2)
	}
	if err := run(*chromium, flag.Arg(0), *out, *waitFor, *width, *height, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "screenshot:", err)
		os.Exit(1)
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

type cdp struct {
	ws *websocket.Conn
	id int
}

// call sends one DevTools command and returns its result, skipping the
// events that arrive in between.
func (c *cdp) call(method string, params any, result any) error {
	c.id++
	if err := websocket.JSON.Send(c.ws, map[string]any{"id": c.id, "method": method, "params": params}); err != nil {
		return err
	}
	for {
		var msg struct {
			ID     int                       `json:"id"`
			Result json.RawMessage           `json:"result"`
			Error  *struct{ Message string } `json:"error"`
		}
		if err := websocket.JSON.Receive(c.ws, &msg); err != nil {
			return err
		}
		if msg.ID != c.id {
			continue
		}
		if msg.Error != nil {
			return fmt.Errorf("%s: %s", method, msg.Error.Message)
		}
		if result == nil {
			return nil
		}
		return json.Unmarshal(msg.Result, result)
	}
}

func run(chromium, url, out, waitFor string, width, height int, timeout time.Duration) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	profile, err := os.MkdirTemp("", "screenshot-profile-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(profile)
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		fmt.Sprintf("--remote-debugging-port=%d", port), "--remote-allow-origins=*", "--user-data-dir="+profile,
		fmt.Sprintf("--window-size=%d,%d", width, height), "about:blank")
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	var target struct{ WebSocketDebuggerURL string }
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/json/list", port))
		if err == nil {
			var targets []struct{ Type, WebSocketDebuggerURL string }
			_ = json.NewDecoder(resp.Body).Decode(&targets)
			resp.Body.Close()
			for _, t := range targets {
				if t.Type == "page" {
					target.WebSocketDebuggerURL = t.WebSocketDebuggerURL
				}
			}
			if target.WebSocketDebuggerURL != "" {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chromium's DevTools did not answer: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	ws, err := websocket.Dial(target.WebSocketDebuggerURL, "", "http://127.0.0.1/")
	if err != nil {
		return err
	}
	defer ws.Close()
	c := &cdp{ws: ws}
	if err := c.call("Page.navigate", map[string]any{"url": url}, nil); err != nil {
		return err
	}
	for {
		var res struct {
			Result struct{ Value string } `json:"result"`
		}
		if err := c.call("Runtime.evaluate", map[string]any{"expression": "document.body ? document.body.innerText : ''", "returnByValue": true}, &res); err != nil {
			return err
		}
		if waitFor == "" || strings.Contains(res.Result.Value, waitFor) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the page did not show %q in %s", waitFor, timeout)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// The text is there; give the rest of the page (icons, the timeline) a
	// moment to draw.
	time.Sleep(2 * time.Second)
	var shot struct{ Data string }
	if err := c.call("Page.captureScreenshot", map[string]any{"format": "png"}, &shot); err != nil {
		return err
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		return err
	}
	return os.WriteFile(out, png, 0o644)
}
