package layers

import "fmt"

// TruncatedError reports a layer with fewer octets than its fixed part needs.
type TruncatedError struct {
	Layer string
	Need  int
	Have  int
}

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("%s: %d octets needed, %d present", e.Layer, e.Need, e.Have)
}

func truncated(layer string, need, have int) error {
	return &TruncatedError{Layer: layer, Need: need, Have: have}
}

// need returns an error when data is shorter than n octets.
func need(layer string, data []byte, n int) error {
	if len(data) < n {
		return truncated(layer, n, len(data))
	}
	return nil
}
