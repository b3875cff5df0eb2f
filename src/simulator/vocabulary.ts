/**
 * Words for synthetic titles, brands and category names: Japanese on amazon.co.jp, English on every
 * other marketplace. Two scripts are enough to try a client's handling of titles.
 */
export interface Vocabulary {
  readonly brands: readonly string[];
  readonly products: readonly string[];
  readonly variants: readonly string[];
  readonly colours: readonly string[];
  readonly categories: readonly string[];
  readonly merchants: readonly string[];
  /** Joins title parts: Japanese titles use full-width spaces less often than one might think. */
  readonly separator: string;
}

export const JA: Vocabulary = {
  brands: ['サクラ工房', 'ミドリ電機', 'ヤマト製作所', 'ひかりライフ', 'アオバ商会', 'コモレビ', 'ハヤテ', 'ツバキ堂', 'ナギサ', 'ホシノ'],
  products: [
    'ワイヤレスイヤホン',
    '電気ケトル',
    'ステンレス水筒',
    'モバイルバッテリー',
    'USB-C 充電ケーブル',
    'ノイズキャンセリングヘッドホン',
    '炊飯器',
    'コーヒーミル',
    'LED デスクライト',
    'ボールペン',
    'ノート',
    '加湿器',
    '電動歯ブラシ',
    'キーボード',
    'マウス',
    'ヨガマット',
    'フライパン',
    '保存容器',
    'リュックサック',
    '折りたたみ傘',
  ],
  variants: ['500ml', '1L', '2個セット', '3本入り', 'Lサイズ', 'Mサイズ', '10000mAh', '日本製', '限定モデル', '大容量'],
  colours: ['ブラック', 'ホワイト', 'ネイビー', 'レッド', 'グレー', 'ピンク', 'グリーン'],
  categories: [
    '家電',
    'キッチン用品',
    '文房具',
    'パソコン周辺機器',
    'スポーツ',
    'ファッション小物',
    '日用品',
    'ヘルスケア',
    'オーディオ',
    'アウトドア',
  ],
  merchants: ['ヤマト商店', 'さくらマーケット', 'みどり屋'],
  separator: ' ',
};

export const EN: Vocabulary = {
  brands: [
    'Acorn Works',
    'Bluefield',
    'Cedar & Co',
    'Driftline',
    'Evergreen Labs',
    'Foxglove',
    'Granite Peak',
    'Harbor Home',
    'Ironleaf',
    'Juniper',
  ],
  products: [
    'Wireless Earbuds',
    'Electric Kettle',
    'Insulated Water Bottle',
    'Portable Charger',
    'USB-C Charging Cable',
    'Noise Cancelling Headphones',
    'Rice Cooker',
    'Coffee Grinder',
    'LED Desk Lamp',
    'Gel Pens',
    'Notebook',
    'Humidifier',
    'Electric Toothbrush',
    'Mechanical Keyboard',
    'Wireless Mouse',
    'Yoga Mat',
    'Nonstick Skillet',
    'Food Storage Containers',
    'Hiking Backpack',
    'Compact Umbrella',
  ],
  variants: ['17 oz', '1 Liter', '2-Pack', '3 Count', 'Large', 'Medium', '10000mAh', 'Made in USA', 'Limited Edition', 'Family Size'],
  colours: ['Black', 'White', 'Navy', 'Red', 'Gray', 'Pink', 'Green'],
  categories: [
    'Electronics',
    'Kitchen & Dining',
    'Office Products',
    'Computer Accessories',
    'Sports & Outdoors',
    'Accessories',
    'Household Supplies',
    'Health & Personal Care',
    'Audio',
    'Camping',
  ],
  merchants: ['Main Street Goods', 'Lakeside Supply', 'Northwind Traders'],
  separator: ' ',
};
