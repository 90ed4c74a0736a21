package lndl_test

import (
	"encoding/json"
	"fmt"

	"github.com/lionbus/lionbus/pkg/lndl"
)

func ExampleParseCall() {
	call, err := lndl.ParseCall("f1", `flights.search(from="NYC", to="LAX", max_stops=1, cabins=("economy", "business"))`)
	if err != nil {
		fmt.Println(err)
		return
	}
	args, _ := json.Marshal(call.Arguments)
	fmt.Println(call.Function)
	fmt.Println(string(args))

	_, err = lndl.ParseCall("f2", `search(query=undefined_name)`)
	fmt.Println(err)
	// Output:
	// flights.search
	// {"cabins":["economy","business"],"from":"NYC","max_stops":1,"to":"LAX"}
	// lact 'f2' body is not a parseable function call: 'search(query=undefined_name)': line 1, column 14: arguments['query']: name 'undefined_name' is not a literal
}
