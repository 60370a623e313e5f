package sweep

// UpdateMarkdown is written later.
func UpdateMarkdown(path string, sw *Sweep, cells []Cell, svg string) error { return nil }
