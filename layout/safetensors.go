package layout

// Checkpoints in the safetensors format
// (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON header, then the data section. The header
// maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}
// (byte offsets into the data section) and may hold "__metadata__", a map of
// strings to strings.
//
// Save writes one F32 tensor per storage leaf, named by its primary path, with
// the data section being θ itself, so loading is one read. The rest of the
// layout goes into the metadata, each key only when it has something to say:
//
//	"flatkit.groups": JSON array of {"path","lo","hi"}, every group in Groups() order
//	"flatkit.ties":   JSON object alias → storage path, leaves in buffer order
//	"flatkit.frozen": JSON array of the frozen leaves' paths
//	"flatkit.holds":  what the file holds when it is not parameters (Holds)
//
// A file carrying any of these keys is rebuilt exactly; a file without them
// (one written by PyTorch, say) is rebuilt with a Builder from the tensor
// names.

import (
	"encoding/binary"
	"maps"
	"math"
	"slices"
	"strings"
	"unsafe"
)

// Metadata keys Save writes and Load reads.
const (
	stMetaKey    = "__metadata__"
	stKeyGroups  = "flatkit.groups"
	stKeyTies    = "flatkit.ties"
	stKeyFrozen  = "flatkit.frozen"
	stKeyHolds   = "flatkit.holds"
	stMaxHeader  = 100_000_000 // bytes; the reference implementation's limit
	stChunkBytes = 1 << 20     // growth step when the data size is not known up front
)

// stDtypeBits is the size in bits of one element of each safetensors dtype.
var stDtypeBits = map[string]int{
	"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
	"I16": 16, "U16": 16, "F16": 16, "BF16": 16,
	"I32": 32, "U32": 32, "F32": 32,
	"I64": 64, "U64": 64, "F64": 64, "C64": 64,
	"F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}

// stDtypeNames lists the dtypes of stDtypeBits, sorted, for an error message.
var stDtypeNames = strings.Join(slices.Sorted(maps.Keys(stDtypeBits)), ", ")

// stNativeLE reports whether float32 bits sit in memory little-endian, in
// which case θ's bytes are the data section as they are.
var stNativeLE = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// stTensor is one validated header entry.
type stTensor struct {
	name       string
	dtype      string
	shape      []int
	begin, end int64 // byte offsets into the data section
}

// stHeader is a validated header: tensors sorted by data offsets, tiling
// [0, dataLen) exactly.
type stHeader struct {
	tensors []stTensor
	meta    map[string]string
	dataLen int64
}

// f32Bytes is the byte view of x (no copy).
func f32Bytes(x []float32) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
}

// fromLE turns floats whose bytes were read little-endian into native floats.
func fromLE(x []float32) {
	if stNativeLE {
		return
	}
	b := f32Bytes(x)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
}
