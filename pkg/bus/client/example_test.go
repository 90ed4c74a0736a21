package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/embedded"
	"github.com/lionbus/lionbus/pkg/bus/histexport"
	"github.com/lionbus/lionbus/pkg/wire"
)

// exampleClient starts a worker service on an embedded server and returns
// a client of it, and the function that stops both.
func exampleClient(ctx context.Context) (*client.Client, func(), error) {
	svc, err := bus.Start(ctx, bus.Config{Embedded: embedded.Config{Port: embedded.RandomPort}})
	if err != nil {
		return nil, nil, err
	}
	nc, err := client.Connect(ctx, client.ConnectConfig{URL: svc.URL()})
	if err != nil {
		svc.Close()
		return nil, nil, err
	}
	stop := func() {
		nc.Close()
		_ = svc.Stop(ctx)
		svc.Close()
	}
	cl, err := client.New(nc, client.Config{})
	if err != nil {
		stop()
		return nil, nil, err
	}
	return cl, stop, nil
}

// scripted is a scripted model answering replies in order.
func scripted(replies ...any) *wire.ModelRef {
	return &wire.ModelRef{Provider: "scripted", Options: map[string]any{"replies": replies}}
}

// A branch, one exchange on it, and the branch read back: each verb has
// a method taking and returning the types of package wire.
func ExampleClient_Communicate() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, stop, err := exampleClient(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	echo := &wire.ModelRef{Provider: "scripted", Model: "echo"}
	created, err := cl.BranchCreate(ctx, "", wire.BranchCreateRequest{BranchID: "demo", System: "Be brief.", ChatModel: echo})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("created", created.Value.ID, "with", created.Value.Settings.ChatModel)

	req := wire.CommunicateRequest{}
	req.Instruction = "Say hello."
	res, err := cl.Communicate(ctx, "demo", req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("communicate:", string(res.Value))

	got, err := cl.BranchGet(ctx, "demo")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range got.Value.Messages {
		fmt.Println("-", m.Kind, m.Role)
	}

	// An error answer is a *client.RemoteError, matched by its code's
	// sentinel.
	_, err = cl.BranchGet(ctx, "missing")
	fmt.Println(errors.Is(err, wire.ErrBranchNotFound), err.(*client.RemoteError).Code)
	// Output:
	// created demo with scripted:echo
	// communicate: "Say hello."
	// - system system
	// - instruction user
	// - assistant_response assistant
	// true branch_not_found
}

// operate with a response format: the model's JSON answer is validated
// against it and answered as the value.
func ExampleClient_Operate() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, stop, err := exampleClient(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	model := scripted(`{"city": "Paris", "population": 2102650}`)
	if _, err := cl.BranchCreate(ctx, "", wire.BranchCreateRequest{BranchID: "geo", ChatModel: model}); err != nil {
		fmt.Println(err)
		return
	}

	req := wire.OperateRequest{}
	req.Instruction = "The largest city of France, and its population."
	req.ResponseFormat = json.RawMessage(`{"type": "object",
		"properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
		"required": ["city", "population"]}`)
	res, err := cl.Operate(ctx, "geo", req)
	if err != nil {
		fmt.Println(err)
		return
	}
	var v struct {
		City       string `json:"city"`
		Population int    `json:"population"`
	}
	if err := json.Unmarshal(res.Value, &v); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(v.City, v.Population, "on", res.BranchID)

	// Invalid data is refused by the worker before any model call.
	bad := wire.OperateRequest{}
	bad.Instruction = "Again."
	bad.HandleValidation = "ignore"
	_, err = cl.Operate(ctx, "geo", bad)
	fmt.Println(err.(*client.RemoteError).Code)
	// Output:
	// Paris 2102650 on geo
	// invalid_data
}

// A page of a branch's history, typed.
func ExampleClient_BranchHistory() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, stop, err := exampleClient(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	echo := &wire.ModelRef{Provider: "scripted", Model: "echo"}
	if _, err := cl.BranchCreate(ctx, "", wire.BranchCreateRequest{BranchID: "log", ChatModel: echo}); err != nil {
		fmt.Println(err)
		return
	}
	req := wire.ChatAndRecordRequest{}
	req.Instruction = "Note this."
	rec, err := cl.ChatAndRecord(ctx, "log", req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("chat_and_record:", rec.Value)

	page, err := cl.BranchHistory(ctx, "log", wire.BranchHistoryRequest{Limit: 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ev := range page.Value.Events {
		fmt.Println(ev.Seq, ev.Type, len(ev.Messages), "messages")
	}
	fmt.Println("next", page.Value.Next, "more", page.Value.More)
	// Output:
	// chat_and_record: Note this.
	// 1 branch.created 0 messages
	// 2 branch.messages 2 messages
	// next 2 more false
}

// A branch read as it was at a history sequence, exported as a file that
// anyone can verify, and rebuilt from it under another id.
func ExampleClient_ExportBranch() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, stop, err := exampleClient(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	echo := &wire.ModelRef{Provider: "scripted", Model: "echo"}
	if _, err := cl.BranchCreate(ctx, "", wire.BranchCreateRequest{BranchID: "journal", System: "Be brief.", ChatModel: echo}); err != nil {
		fmt.Println(err)
		return
	}
	var seqs []uint64
	for _, text := range []string{"first", "second"} {
		req := wire.ChatAndRecordRequest{}
		req.Instruction = text
		if _, err := cl.ChatAndRecord(ctx, "journal", req); err != nil {
			fmt.Println(err)
			return
		}
		b, err := cl.BranchGet(ctx, "journal")
		if err != nil {
			fmt.Println(err)
			return
		}
		seqs = append(seqs, b.Value.Seq)
	}
	then, err := cl.BranchGetAt(ctx, "journal", wire.BranchGetRequest{AtSeq: seqs[0]})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("at the first exchange:", len(then.Value.Messages), "messages")

	var file bytes.Buffer
	n, err := cl.ExportBranch(ctx, "journal", &file, "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	sum, err := histexport.Verify(bytes.NewReader(file.Bytes()))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("exported", n, "events;", sum.Header.Format, sum.Lines, "lines")

	res, err := cl.ImportBranch(ctx, &file, "journal-copy", client.ImportOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	copied, err := cl.BranchGet(ctx, res.BranchID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("imported into", res.BranchID+":", len(copied.Value.Messages), "messages")
	// Output:
	// at the first exchange: 3 messages
	// exported 3 events; lionbus.history/2 5 lines
	// imported into journal-copy: 5 messages
}
