package relay

import (
	"encoding/json"
	"fmt"

	"github.com/klauspost/compress/zstd"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
)

// batchWork is the work of one relay batch as it travels (JSON, then
// compressed, then sealed): each distinct work once, without its TaskID
// (unique per host), and for each soul its SID, its TaskID and the index
// of its work. A one-task fan-out over 19,000 souls is one work and
// 19,000 short entries.
type batchWork struct {
	Works []dispatch.Work `json:"works"`
	Souls []batchSoul     `json:"souls"`
}

type batchSoul struct {
	SID    string `json:"s"`
	TaskID string `json:"t"`
	Work   int    `json:"w"`
}

// batchResult is one soul's result in a results row.
type batchResult struct {
	SID    string          `json:"s"`
	Result json.RawMessage `json:"r"`
}

// maxBatchWork bounds the distinct works' encoded size in one batch (a
// per-host bundle times 19,000 souls would not fit a row): beyond it the
// souls of one keeper go in several batches.
const maxBatchWork = 32 << 20

// newBatches groups reqs (all for one keeper) into batches of at most
// maxBatchWork bytes of distinct work.
func newBatches(reqs []dispatch.Request) ([]*batchWork, error) {
	var out []*batchWork
	var cur *batchWork
	var size int
	index := map[string]int{}
	for _, req := range reqs {
		w := req.Work
		taskID := w.TaskID
		w.TaskID = ""
		b, err := json.Marshal(w)
		if err != nil {
			return nil, fmt.Errorf("encoding work for soul %s: %w", req.SID, err)
		}
		i, seen := index[string(b)]
		if cur != nil && !seen && size+len(b) > maxBatchWork && len(cur.Souls) > 0 {
			cur = nil
		}
		if cur == nil {
			cur = &batchWork{}
			out = append(out, cur)
			size = 0
			clear(index)
			seen = false
		}
		if !seen {
			i = len(cur.Works)
			cur.Works = append(cur.Works, w)
			index[string(b)] = i
			size += len(b)
		}
		cur.Souls = append(cur.Souls, batchSoul{SID: req.SID, TaskID: taskID, Work: i})
	}
	return out, nil
}

// requests turns a batch back into the requests it carries.
func (bw *batchWork) requests() ([]dispatch.Request, error) {
	out := make([]dispatch.Request, len(bw.Souls))
	for i, s := range bw.Souls {
		if s.Work < 0 || s.Work >= len(bw.Works) || s.SID == "" {
			return nil, fmt.Errorf("relayed batch entry %d is malformed", i)
		}
		w := bw.Works[s.Work]
		w.TaskID = s.TaskID
		out[i] = dispatch.Request{SID: s.SID, Work: w}
	}
	return out, nil
}

// codec compresses then seals what travels in relay rows.
type codec struct {
	enc  *zstd.Encoder
	dec  *zstd.Decoder
	seal *sealer
}

func newCodec(seal *sealer) (*codec, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(1<<30))
	if err != nil {
		return nil, err
	}
	return &codec{enc: enc, dec: dec, seal: seal}, nil
}

func (c *codec) encode(v any, ad []byte) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return c.seal.seal(c.enc.EncodeAll(b, nil), ad)
}

func (c *codec) decode(b []byte, ad []byte, v any) error {
	plain, err := c.seal.open(b, ad)
	if err != nil {
		return err
	}
	if plain, err = c.dec.DecodeAll(plain, nil); err != nil {
		return fmt.Errorf("decompressing relayed data: %w", err)
	}
	return json.Unmarshal(plain, v)
}

// encodeResults encodes results for a results row.
func (c *codec) encodeResults(rs []batchResult) ([]byte, error) {
	return c.encode(rs, adResult)
}

// decodeResults reads a results row back.
func (c *codec) decodeResults(b []byte) ([]batchResult, error) {
	var rs []batchResult
	if err := c.decode(b, adResult, &rs); err != nil {
		return nil, fmt.Errorf("decoding relayed results: %w", err)
	}
	return rs, nil
}

// result decodes one soul's result.
func (br batchResult) result() (domain.Result, error) {
	res, err := dispatch.DecodeResult(br.Result)
	if err != nil {
		return res, fmt.Errorf("decoding relayed result of soul %s: %w", br.SID, err)
	}
	return res, nil
}
