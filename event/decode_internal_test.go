package event

import "testing"

func TestEditDistanceFindsTyposWithinTwoEdits(t *testing.T) {
	tests := []struct {
		a, b string
		want int // 99: more than two edits apart
	}{
		{"end_datetme", "end_datetime", 1},
		{"strat_date", "start_date", 2},
		{"start_date", "start_date", 0},
		{"start_dat", "start_date", 1},
		{"tart_dat", "start_date", 2},
		{"", "ab", 2},
		{"ab", "", 2},
		{"start_date", "end_date", 99},
		{"x", "start_date", 99},
		{"START_DATE", "start_date", 99},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
