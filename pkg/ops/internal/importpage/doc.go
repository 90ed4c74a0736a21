// Package importpage decodes and checks a page of branch.import, the
// history events of an export, before the engine appends them: the
// events as the store keeps them, every number of their content kept as
// exactly as the store keeps numbers, the page refused with a
// CodeInvalidRequest error naming the event at fault.
package importpage
