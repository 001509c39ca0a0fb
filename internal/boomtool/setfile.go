package boomtool

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/protobuf/encoding/protojson"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

// fileChunk is how many tasks of a --file go to ScheduleBatch at a time,
// each chunk within --timeout: a few RegisterTasks requests in flight
// together, and results printed as they come.
const fileChunk = 8 * client.MaxBatch

// taskLine is one line of a --file: the fields of set's flags.
type taskLine struct {
	Payload         *string `json:"payload"`
	PayloadBase64   []byte  `json:"payload-base64"` // binary payloads, in standard base64
	Delay           string  `json:"delay"`
	At              string  `json:"at"`
	Every           string  `json:"every"`
	Cron            string  `json:"cron"`
	TZ              string  `json:"tz"`
	Replace         string  `json:"replace"`
	Debounce        string  `json:"debounce"`
	MaxWait         string  `json:"max-wait"`
	Group           string  `json:"group"`
	Key             string  `json:"key"`
	Mode            string  `json:"mode"`
	Callback        string  `json:"callback"`
	CallbackTimeout string  `json:"callback-timeout"`
	Pool            string  `json:"pool"`
	MaxAttempts     uint32  `json:"max-attempts"`
	Empty           bool    `json:"empty"`
}

// fileTask is a task of a --file and the line it came from.
type fileTask struct {
	line int
	task client.Task
}

// onlyFlag refuses arguments and set's other flags beside --file: the
// file gives every field.
func onlyFlag(cmd *cobra.Command, name string, args []string) error {
	if len(args) > 0 {
		return usagef("--%s takes the payloads from the file: drop the argument %q", name, args[0])
	}
	var other []string
	local := cmd.LocalFlags()
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Name != name && local.Lookup(f.Name) != nil {
			other = append(other, "--"+f.Name)
		}
	})
	if len(other) > 0 {
		return usagef("--%s takes every field from the file: drop %s", name, strings.Join(other, ", "))
	}
	return nil
}

// setFromFile schedules every task of path ("-": standard input). The
// whole file is read and checked first, so a malformed line schedules
// nothing; then each line's task succeeds or fails on its own.
func (a *app) setFromFile(cmd *cobra.Command, path string) error {
	tasks, err := a.readTaskFile(path)
	if err != nil {
		return err
	}
	ctx, cancel := a.context(cmd)
	c, err := a.connect(ctx)
	cancel()
	if err != nil {
		return err
	}
	defer a.close()
	failed := 0
	var stopped error // a request failed as a whole: later ones would break group order
	for start := 0; start < len(tasks); start += fileChunk {
		chunk := tasks[start:min(start+fileChunk, len(tasks))]
		results := make([]client.ScheduleResult, len(chunk))
		if stopped == nil {
			batch := make([]client.Task, len(chunk))
			for i, t := range chunk {
				batch[i] = t.task
			}
			ctx, cancel := a.context(cmd)
			results, stopped = c.ScheduleBatch(ctx, batch...)
			cancel()
		} else {
			for i := range results {
				results[i].Err = stopped
			}
		}
		for i, r := range results {
			if r.Err != nil {
				failed++
			}
			if err := a.writeFileResult(chunk[i].line, r); err != nil {
				return err
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d tasks failed", failed, len(tasks))
	}
	return nil
}

// readTaskFile reads and checks every line of a --file. Blank lines are
// skipped; line numbers count them.
func (a *app) readTaskFile(path string) ([]fileTask, error) {
	var r io.Reader = a.env.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	br := bufio.NewReader(r)
	var tasks []fileTask
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			t, perr := parseTaskLine(line)
			if perr != nil {
				return nil, usagef("%s line %d: %v", fileName(path), n, perr)
			}
			tasks = append(tasks, fileTask{line: n, task: t})
		}
		if errors.Is(err, io.EOF) {
			return tasks, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func fileName(path string) string {
	if path == "-" {
		return "standard input"
	}
	return path
}

// parseTaskLine reads one line as set would read its flags.
func parseTaskLine(line []byte) (client.Task, error) {
	var l taskLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return client.Task{}, fmt.Errorf("not a task object: %v", strings.TrimPrefix(err.Error(), "json: "))
	}
	spec := taskSpec{group: l.Group, key: l.Key, cron: l.Cron, tz: l.TZ, replace: l.Replace, mode: l.Mode, callback: l.Callback, pool: l.Pool, maxAttempts: l.MaxAttempts, empty: l.Empty, inFile: true}
	switch {
	case l.Payload != nil && l.PayloadBase64 != nil:
		return client.Task{}, errors.New(`give "payload" or "payload-base64", not both`)
	case l.Payload != nil:
		spec.payload, spec.given = []byte(*l.Payload), true
	case l.PayloadBase64 != nil:
		spec.payload, spec.given = l.PayloadBase64, true
	}
	for _, f := range []struct {
		value string
		into  interface{ Set(string) error }
	}{{l.Delay, &spec.delay}, {l.Every, &spec.every}, {l.Debounce, &spec.debounce}, {l.MaxWait, &spec.maxWait}, {l.CallbackTimeout, &spec.cbTimeout}, {l.At, &spec.at}} {
		if f.value == "" {
			continue
		}
		if err := f.into.Set(f.value); err != nil {
			return client.Task{}, err
		}
	}
	opts, err := spec.options()
	if err != nil {
		return client.Task{}, err
	}
	return client.NewTask(spec.payload, opts...), nil
}

// writeFileResult prints one line's result: a line of text, or with -o
// json the RegisterTaskResult in the protobuf JSON mapping with the line
// number, on one line.
func (a *app) writeFileResult(line int, r client.ScheduleResult) error {
	if a.output != "json" {
		msg := ""
		if r.Err != nil {
			msg = describe(r.Err, a)
		} else {
			msg = a.scheduled(r.Task, r.Created)
		}
		_, err := fmt.Fprintf(a.env.Stdout, "line %d: %s\n", line, msg)
		return err
	}
	res := &boomerangv1.RegisterTaskResult{}
	var ce *client.Error
	switch {
	case errors.As(r.Err, &ce):
		res.Result = &boomerangv1.RegisterTaskResult_Error{Error: &boomerangv1.Error{Status: ce.Status, Message: ce.Message, Field: ce.Field}}
	case r.Err != nil:
		res.Result = &boomerangv1.RegisterTaskResult_Error{Error: &boomerangv1.Error{Message: r.Err.Error()}}
	default:
		res.Result = &boomerangv1.RegisterTaskResult_Registered{Registered: &boomerangv1.RegisterTaskResponse{Task: r.Task, Created: r.Created, Replaced: !r.Created && r.Task.GetReplaceKey() != ""}}
	}
	b, err := protojson.Marshal(res)
	if err != nil {
		return err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	obj["line"] = json.RawMessage(fmt.Sprint(line))
	out, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.env.Stdout, "%s\n", out)
	return err
}
