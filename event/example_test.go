package event_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/govkit/govkit/event"
)

func Example() {
	// Decode strictly: every broken rule is reported at once.
	_, err := event.Parse([]byte(`{"start_date":"2023-02-29","end_datetme":"2024-01-01T10:00:00Z"}`))
	var problems event.Problems
	if errors.As(err, &problems) {
		for _, p := range problems {
			fmt.Println(p)
		}
	}
	fmt.Println("unknown property:", errors.Is(err, event.ErrUnknownProperty))

	// A valid Event keeps its values exactly as written.
	e, err := event.Parse([]byte(`{"end_datetime":"2024-12-01T17:00:00Z","start_datetime":"2024-12-01T9:05:00.1Z"}`))
	if err != nil {
		panic(err)
	}
	out, _ := json.Marshal(e)
	fmt.Println(string(out))
	start, _ := e.Start().Time()
	fmt.Println(e.Form(), start.Format(time.RFC3339Nano), e.CheckOrder() == nil)

	// For reporting, convert to the date in the system's zone, not in UTC.
	pacific, _ := time.LoadLocation("America/Vancouver")
	late, _ := event.NewDateTime(time.Date(2024, 12, 1, 7, 59, 59, 0, time.UTC))
	d, _ := late.ToDateForm(pacific)
	fmt.Println(late, "->", d)
	// Output:
	// start_date: "2023-02-29": not a real day of that month and year (rule 5)
	// end_datetme: unknown property (did you mean end_datetime?); an Event has only start_date, end_date, start_datetime, end_datetime (rule 6)
	// unknown property: true
	// {"start_datetime":"2024-12-01T9:05:00.1Z","end_datetime":"2024-12-01T17:00:00Z"}
	// datetime 2024-12-01T09:05:00.1Z true
	// {"start_datetime":"2024-12-01T07:59:59Z"} -> {"start_date":"2024-11-30"}
}

func ExampleValidate() {
	for _, record := range []string{
		`{"start_datetime":"2024-12-01T10:00:00\u005a"}`,
		`{"start_date":"2024-12-01","end_date":null}`,
		`{"start_date":"2024-12-01","start_date":"2024-12-02"}`,
	} {
		fmt.Println(event.Validate([]byte(record)))
	}
	// Output:
	// <nil>
	// end_date: null is not a string: leave the property out instead (rule 8)
	// start_date: appears more than once in the object (rule 7)
}
