package main

// BENCH_PERF=1 records where the stack's processes spend their CPU during
// a size's measured window, with Linux perf (sampling call stacks of the
// worker, the watcher, Temporal, the apiserver and etcd), and prints, per
// process, the functions most of its samples ran in. The tools cache holds
// stripped binaries (no ELF symbols, so `perf report` shows bare
// addresses); Go keeps its own function table (pclntab) in a stripped
// binary, and `go tool addr2line` reads it, so the samples are symbolized
// here instead.

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// perfRecording is a running `perf record` of some processes.
type perfRecording struct {
	cmd  *exec.Cmd
	file string
	// exe maps a pid to its binary, read when the recording started.
	exe     map[int]string
	names   map[int]string
	stderr  bytes.Buffer
	stopped bool
}

// startPerf samples the call stacks of pids (name -> pid) into dir.
func startPerf(dir, label string, pids map[string]int) (*perfRecording, error) {
	if _, err := exec.LookPath("perf"); err != nil {
		return nil, fmt.Errorf("BENCH_PERF needs Linux perf on the PATH: %w", err)
	}
	r := &perfRecording{file: filepath.Join(dir, "perf-"+label+".data"), exe: map[int]string{}, names: map[int]string{}}
	var list []string
	for name, pid := range pids {
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil {
			return nil, fmt.Errorf("binary of %s (pid %d): %w", name, pid, err)
		}
		r.exe[pid], r.names[pid] = exe, name
		list = append(list, strconv.Itoa(pid))
	}
	// 499 Hz: about 500 samples per busy CPU-second, a cost small next to
	// what the processes themselves spend.
	r.cmd = exec.Command("perf", "record", "-F", "499", "-g", "-o", r.file, "-p", strings.Join(list, ","))
	r.cmd.Stdout, r.cmd.Stderr = io.Discard, &r.stderr
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("perf record: %w", err)
	}
	// perf writes its file's header once it is attached: a SIGINT before
	// that ends it with nothing recorded (an N=1 window is that short).
	for deadline := time.Now().Add(10 * time.Second); ; {
		if st, err := os.Stat(r.file); err == nil && st.Size() > 0 {
			return r, nil
		}
		if time.Now().After(deadline) {
			_ = r.cmd.Process.Kill()
			_ = r.cmd.Wait() // its stderr is complete once it has exited
			return nil, fmt.Errorf("perf record did not start: %s", strings.TrimSpace(r.stderr.String()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the recording (perf writes its file on SIGINT); a second call
// does nothing.
func (r *perfRecording) stop() error {
	if r.stopped {
		return nil
	}
	r.stopped = true
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		return fmt.Errorf("stop perf record: %w", err)
	}
	err := r.cmd.Wait()
	var exit *exec.ExitError
	if err == nil {
		return nil
	}
	if errors.As(err, &exit) {
		// perf writes its file on SIGINT and then raises the signal again on
		// itself, so that its parent sees how it ended.
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGINT {
			return nil
		}
	}
	return fmt.Errorf("perf record: %w: %s", err, strings.TrimSpace(r.stderr.String()))
}

// perfSample is one sampled call stack, innermost frame first.
type perfSample struct {
	pid    int
	frames []perfFrame
}

type perfFrame struct {
	offset uint64 // file offset within dso, as perf script prints it
	dso    string
}

// report symbolizes the recording and writes, per process, its share of
// the samples and the functions with the largest inclusive and self shares,
// and those of the functions focus matches (BENCH_PERF_FOCUS), if set.
func (r *perfRecording) report(w io.Writer, top int, focus *regexp.Regexp) error {
	out, err := exec.Command("perf", "script", "-i", r.file, "-F", "pid,ip,dso").Output()
	if err != nil {
		return fmt.Errorf("perf script: %w", err)
	}
	samples := parsePerfScript(out)
	names, err := r.symbolize(samples)
	if err != nil {
		return err
	}
	byPid := map[int][]perfSample{}
	for _, s := range samples {
		byPid[s.pid] = append(byPid[s.pid], s)
	}
	pids := make([]int, 0, len(byPid))
	for pid := range byPid {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return len(byPid[pids[i]]) > len(byPid[pids[j]]) })
	fmt.Fprintf(w, "perf: %d samples at 499 Hz (%s)\n", len(samples), r.file)
	for _, pid := range pids {
		ss := byPid[pid]
		fmt.Fprintf(w, "\n%s (pid %d): %d samples, %.1f%% of all\n", r.names[pid], pid, len(ss), 100*float64(len(ss))/float64(len(samples)))
		self, incl := perfShares(ss, func(f perfFrame) string {
			if name, ok := names[f]; ok && name != "" {
				return name
			}
			return "[unknown]" // outside the binary's loadable segments
		})
		fmt.Fprintln(w, "  inclusive (outside the Go runtime):")
		writeShares(w, incl, len(ss), top, func(fn string) bool { return !strings.HasPrefix(fn, "runtime.") })
		fmt.Fprintln(w, "  self:")
		writeShares(w, self, len(ss), top/2, func(string) bool { return true })
		if focus != nil {
			fmt.Fprintf(w, "  inclusive, matching %s:\n", focus)
			writeShares(w, incl, len(ss), top, focus.MatchString)
		}
	}
	return nil
}

// parsePerfScript reads `perf script -F pid,ip,dso`: a line with the pid
// (padded with spaces), then one tab-indented "offset (dso)" line per
// frame, then a blank line.
func parsePerfScript(out []byte) []perfSample {
	var samples []perfSample
	var cur *perfSample
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			cur = nil
		case !strings.HasPrefix(line, "\t"):
			pid, err := strconv.Atoi(strings.Fields(trimmed)[0])
			if err != nil {
				cur = nil
				continue
			}
			samples = append(samples, perfSample{pid: pid})
			cur = &samples[len(samples)-1]
		case cur != nil:
			ip, dso, _ := strings.Cut(trimmed, " ")
			off, err := strconv.ParseUint(ip, 16, 64)
			if err != nil {
				continue
			}
			cur.frames = append(cur.frames, perfFrame{offset: off, dso: strings.Trim(dso, "()")})
		}
	}
	return samples
}

// symbolize names every frame of the recorded binaries through
// `go tool addr2line`; frames elsewhere (the kernel, libc) are named by
// their dso.
func (r *perfRecording) symbolize(samples []perfSample) (map[perfFrame]string, error) {
	binaries := map[string]bool{}
	for _, exe := range r.exe {
		binaries[exe] = true
	}
	wanted := map[string]map[uint64]bool{}
	names := map[perfFrame]string{}
	for _, s := range samples {
		for _, f := range s.frames {
			if !binaries[f.dso] {
				names[f] = "[" + filepath.Base(f.dso) + "]"
				continue
			}
			if wanted[f.dso] == nil {
				wanted[f.dso] = map[uint64]bool{}
			}
			wanted[f.dso][f.offset] = true
		}
	}
	for bin, offsets := range wanted {
		named, err := addr2line(bin, offsets)
		if err != nil {
			return nil, err
		}
		for off, fn := range named {
			names[perfFrame{offset: off, dso: bin}] = fn
		}
	}
	return names, nil
}

// addr2line names file offsets of a Go binary: each offset becomes a
// virtual address through the loadable segment holding it.
func addr2line(bin string, offsets map[uint64]bool) (map[uint64]string, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", bin, err)
	}
	var loads []*elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			loads = append(loads, p)
		}
	}
	_ = f.Close()
	order := make([]uint64, 0, len(offsets))
	var in strings.Builder
	for off := range offsets {
		for _, p := range loads {
			if off >= p.Off && off < p.Off+p.Filesz {
				order = append(order, off)
				fmt.Fprintf(&in, "%#x\n", off-p.Off+p.Vaddr)
				break
			}
		}
	}
	cmd := exec.Command("go", "tool", "addr2line", bin)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go tool addr2line %s: %w", bin, err)
	}
	// Two lines per address: the function, then file:line.
	lines := strings.Split(string(out), "\n")
	named := make(map[uint64]string, len(order))
	for i, off := range order {
		if 2*i < len(lines) {
			named[off] = lines[2*i]
		}
	}
	return named, nil
}

// perfShares counts, per function, the samples it was the innermost frame
// of (self) and the samples it was anywhere on the stack of (inclusive).
func perfShares(samples []perfSample, name func(perfFrame) string) (self, incl map[string]int) {
	self, incl = map[string]int{}, map[string]int{}
	for _, s := range samples {
		if len(s.frames) == 0 {
			continue
		}
		self[name(s.frames[0])]++
		seen := map[string]bool{}
		for _, f := range s.frames {
			fn := name(f)
			if !seen[fn] {
				seen[fn] = true
				incl[fn]++
			}
		}
	}
	return self, incl
}

func writeShares(w io.Writer, counts map[string]int, total, top int, keep func(string) bool) {
	fns := make([]string, 0, len(counts))
	for fn := range counts {
		if keep(fn) {
			fns = append(fns, fn)
		}
	}
	sort.Slice(fns, func(i, j int) bool {
		if counts[fns[i]] != counts[fns[j]] {
			return counts[fns[i]] > counts[fns[j]]
		}
		return fns[i] < fns[j]
	})
	for i, fn := range fns {
		if i == top {
			break
		}
		fmt.Fprintf(w, "    %5.1f%%  %s\n", 100*float64(counts[fn])/float64(total), fn)
	}
}
