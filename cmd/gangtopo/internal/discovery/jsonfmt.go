package discovery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// indentJSON re-indents compact JSON two spaces per level, but keeps arrays
// of scalars on one line, so a link matrix reads as a matrix and a PCI path
// as a path. encoding/json's own indenting puts every element on a line of
// its own, which makes an 8-GPU node map hundreds of lines of numbers.
func indentJSON(compact []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(compact))
	dec.UseNumber()
	var b bytes.Buffer
	if err := writeValue(dec, &b, 0); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

func writeValue(dec *json.Decoder, b *bytes.Buffer, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, isDelim := tok.(json.Delim)
	if !isDelim {
		v, err := json.Marshal(tok)
		if err != nil {
			return err
		}
		b.Write(v)
		return nil
	}
	switch d {
	case '{':
		return writeObject(dec, b, depth)
	case '[':
		return writeArray(dec, b, depth)
	}
	return fmt.Errorf("unexpected %v", d)
}

// writeObject writes an object one member a line, or on one line when all
// its values are scalars and it fits in inlineWidth characters.
func writeObject(dec *json.Decoder, b *bytes.Buffer, depth int) error {
	var members []string
	scalars := true
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := json.Marshal(key)
		var v bytes.Buffer
		if err := writeValue(dec, &v, depth+1); err != nil {
			return err
		}
		scalars = scalars && !isComposite(v.Bytes())
		members = append(members, string(k)+": "+v.String())
	}
	if _, err := dec.Token(); err != nil { // '}'
		return err
	}
	inline := "{" + strings.Join(members, ", ") + "}"
	if len(members) == 0 || scalars && len(inline)+2*depth <= inlineWidth {
		b.WriteString(inline)
		return nil
	}
	pad := "\n" + strings.Repeat("  ", depth+1)
	b.WriteString("{" + pad + strings.Join(members, ","+pad) + "\n" + strings.Repeat("  ", depth) + "}")
	return nil
}

// inlineWidth is the longest line an all-scalar object is kept on.
const inlineWidth = 100

func isComposite(v []byte) bool { return len(v) > 0 && (v[0] == '{' || v[0] == '[') }

func writeArray(dec *json.Decoder, b *bytes.Buffer, depth int) error {
	var elems [][]byte
	scalars := true
	for dec.More() {
		var e bytes.Buffer
		if err := writeValue(dec, &e, depth+1); err != nil {
			return err
		}
		scalars = scalars && !isComposite(e.Bytes())
		elems = append(elems, e.Bytes())
	}
	if _, err := dec.Token(); err != nil { // ']'
		return err
	}
	if scalars {
		b.WriteString("[" + string(bytes.Join(elems, []byte(", "))) + "]")
		return nil
	}
	pad := "\n" + strings.Repeat("  ", depth+1)
	b.WriteString("[" + pad + string(bytes.Join(elems, []byte(","+pad))) + "\n" + strings.Repeat("  ", depth) + "]")
	return nil
}
