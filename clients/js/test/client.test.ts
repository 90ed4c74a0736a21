// Every verb through the typed client, against a real worker: each
// answer's data matches its result schema; errors are LionErrors with the
// stable code; answers are read back later; await is bounded; a cancel
// reaches a running request.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Answer, errorCodes, LionError, verbs, WaitError } from "../src/index.js";
import type { BranchGetResult, CommunicateResult, Verb } from "../src/index.js";
import { conforms } from "./conform.js";
import { client, fresh } from "./helpers.js";

const format = { type: "object", properties: { city: { type: "string" } }, required: ["city"] } as const;

test("every verb through the typed client", async (t) => {
  const lion = await client(t);
  const seen = new Set<Verb>();
  const check = <R>(verb: Verb, r: R): R => {
    conforms(`lionbus.${verb}.result`, r);
    seen.add(verb);
    return r;
  };
  const b = fresh("verbs");
  const replies = [
    "recorded reply",
    '{"city": "Lyon"}',
    '{"answer": "done"}',
    '{"analysis": "Nothing to do.", "planned_actions": [], "extension_needed": false}',
    "the final answer",
  ];
  const created = check("branch.create", await lion.branchCreate({ branch_id: b, system: "Be brief.", chat_model: { provider: "scripted", replies } }));
  assert.equal(created.value.id, b);

  const got: BranchGetResult = check("branch.get", await lion.branchGet(b));
  assert.equal(got.value.messages[0].kind, "system");

  const chat = check("chat", await lion.chat(b, { instruction: "Hi", chat_model: "scripted:echo" }));
  assert.equal(chat.value, "Hi");

  const rec = check("chat_and_record", await lion.chatAndRecord(b, { instruction: "Record this" }));
  assert.equal(rec.value, "recorded reply");

  const comm: CommunicateResult = check("communicate", await lion.communicate(b, { instruction: "Where?", response_format: format }));
  assert.deepEqual(comm.value, { city: "Lyon" });

  const parsed = check("parse", await lion.parse(b, { text: 'Sure: {"City": "Paris"}', response_format: format }));
  assert.deepEqual(parsed.value, { city: "Paris" });

  const op = check("operate", await lion.operate(b, { instruction: "Work", response_format: { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] } }));
  assert.deepEqual(op.value, { answer: "done" });

  const re = check("react", await lion.react(b, { instruction: "Answer", return_analysis: true, extension_allowed: false }));
  assert.equal(re.value, "the final answer");
  assert.equal(re.analyses?.length, 1);

  const interp = check("interpret", await lion.interpret(b, { text: "cheap flights??", chat_model: "scripted:echo" }));
  assert.equal(typeof interp.value, "string");

  const act = check("act", await lion.act(b, { action_requests: [] }));
  assert.deepEqual(act.value, []);

  const hist = check("branch.history", await lion.branchHistory(b, { after: 0, limit: 2 }));
  assert.equal(hist.value.events.length, 2);
  assert.equal(hist.value.more, true);

  const whole = await lion.branchHistory(b, { after: 0, limit: 1000 });
  const [start, ...rest] = whole.value.events;
  assert.ok(start);
  const imported = check("branch.import", await lion.branchImport(fresh("verbs-import"), { events: [start, ...rest] }));
  assert.equal(imported.value.imported, whole.value.events.length);
  assert.equal(imported.value.present, 0);

  const copy = fresh("verbs-copy");
  const cloned = check("branch.clone", await lion.branchClone(b, { branch_id: copy }));
  assert.equal(cloned.branch_id, copy);

  const forkID = fresh("verbs-fork");
  const forked = check("branch.fork", await lion.branchFork(b, { branch_id: forkID }));
  assert.equal(forked.branch_id, forkID);
  assert.equal(forked.value.fork.branch_id, b);
  assert.equal(forked.value.messages, cloned.value.messages.length);
  const forks = check("branch.forks", await lion.branchForks(b, {}));
  assert.deepEqual(forks.value.forks.map((f) => f.branch_id), [forkID]);

  const cleared = check("branch.clear", await lion.branchClear(copy));
  assert.equal(cleared.value.messages.length, 1);

  const deleted = check("branch.delete", await lion.branchDelete(copy));
  assert.ok((deleted.value.seq ?? 0) > 0, "the tombstone's sequence");
  assert.deepEqual(deleted.value, { branch_id: copy, deleted: true, seq: deleted.value.seq });

  const listed = check("branch.list", await lion.branchList({ limit: 1000 }));
  const ids = listed.value.branches.map((x) => x.branch_id);
  assert.ok(ids.includes(b), "the branch of this test is listed");
  assert.ok(!ids.includes(copy), "a deleted branch is not listed");
  assert.deepEqual(ids, [...ids].sort(), "sorted by id");

  const rb = fresh("run");
  await lion.branchCreate({ chat_model: "cli:fake" }, { branch: rb });
  const run = check("run", await lion.run(rb, { instruction: "List the files" }));
  assert.notEqual(run.value.canceled, true);
  assert.ok((run.value.chunks ?? 0) > 1);

  const echo = await lion.op<{ say: string }>("echo", { say: "hi" });
  assert.deepEqual(echo.value, { say: "hi" });

  assert.deepEqual([...seen].sort(), [...verbs].sort(), "a verb was not exercised");
});

test("an error answer is a LionError with its stable code", async (t) => {
  const lion = await client(t);
  const missing = fresh("missing");
  await assert.rejects(lion.branchGet(missing), (err: unknown) => {
    assert.ok(err instanceof LionError);
    assert.equal(err.code, "branch_not_found");
    assert.ok(errorCodes.includes(err.code as (typeof errorCodes)[number]));
    return true;
  });
  // A request the worker rejects before running it: the data does not match the schema.
  const b = fresh("bad");
  await lion.branchCreate({ branch_id: b, chat_model: "scripted:echo" });
  const call = lion.submit("communicate", b, { instruction: 42 });
  const answer = await call.answer();
  assert.equal(answer.type, "lionbus.error");
  assert.equal(answer.error?.code, "invalid_data");
  assert.equal(answer.requestId, call.id);
  conforms("lionbus.error", answer.event.data);
  await assert.rejects(lion.op("nosuchop", {}), (err: unknown) => err instanceof LionError && err.code === "unknown_verb");
});

test("binary content mode, a given id runs once, and answers are read back later", async (t) => {
  const lion = await client(t);
  const b = fresh("binary");
  await lion.branchCreate({ branch_id: b, chat_model: "scripted:echo" }, { binary: true });
  const id = fresh("req");
  const first = await lion.communicate(b, { instruction: "once" }, { id, binary: true });
  assert.equal(first.value, "once");
  // The same id again: answered from the stored answer, not run again.
  const again = lion.communicate(b, { instruction: "twice" }, { id });
  assert.equal((await again).value, "once");
  const hist = await lion.branchHistory(b);
  assert.equal(hist.value.events.filter((e) => e.request_id === id).length, 1);

  const stored = await lion.result<CommunicateResult>(id);
  assert.ok(stored instanceof Answer);
  assert.equal(stored.type, "lionbus.communicate.result");
  assert.equal(stored.result().value, "once");
  const awaited = await lion.await<CommunicateResult>(id, { timeout: 5000 });
  assert.equal(awaited.id, stored.id, "every answer to one request has the same event id");
  assert.equal(await lion.result(fresh("never")), undefined);
});

test("await is bounded by its timeout, and a cancel ends a running request", async (t) => {
  const lion = await client(t);
  const b = fresh("hang");
  await lion.branchCreate({ branch_id: b, chat_model: "cli:fake" });
  const call = lion.run(b, { instruction: "HANG until cancelled" });
  await call.submitted;
  await assert.rejects(lion.await(call.id, { timeout: 300 }), (err: unknown) => err instanceof WaitError && err.requestId === call.id);
  const ac = new AbortController();
  const aborted = lion.await(call.id, { signal: ac.signal });
  ac.abort();
  await assert.rejects(aborted, WaitError);
  await call.cancel();
  const res = await call;
  assert.equal(res.value.canceled, true);
});

test("a deadline in the past is answered timeout without running", async (t) => {
  const lion = await client(t);
  const b = fresh("late");
  await lion.branchCreate({ branch_id: b, chat_model: "scripted:echo" });
  await assert.rejects(lion.communicate(b, { instruction: "too late" }, { deadline: new Date(Date.now() - 1000) }),
    (err: unknown) => err instanceof LionError && err.code === "timeout");
  const hist = await lion.branchHistory(b);
  assert.equal(hist.value.events.length, 1, "nothing was recorded");
});

test("bad options are refused before anything is sent", async (t) => {
  const lion = await client(t);
  assert.throws(() => lion.communicate("no.dots", { instruction: "x" }), TypeError);
  assert.throws(() => lion.communicate("b", { instruction: "x" }, { id: "a b" }), TypeError);
  assert.throws(() => lion.communicate("b", { instruction: "x" }, { replyTo: "lion.reply.other" }), TypeError);
  assert.throws(() => lion.communicate("b", { instruction: "x" }, { traceparent: "00-bad" }), TypeError);
  assert.throws(() => lion.submit("bad verb", "b", {}), TypeError);
});
