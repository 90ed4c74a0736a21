// Package tools holds lionbus's remote-tool side: what a tool service
// registers in the tool registry and, as it grows, the SDK for writing tool
// services and the NATS implementation of the invoker that pkg/ops uses.
//
// A tool is described by an [Entry], stored as JSON under the tool's name in
// the KV bucket "<prefix>_tools" (default "lion_tools"), and answers
// CloudEvents of type lionbus.tool.invoke on its subject
// ("<prefix>.tool.<name>") in a queue group. A tool service in any language
// needs nothing more than a valid Entry and a responder on that subject.
package tools
