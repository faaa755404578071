//! One module per provider. Each module's docs state the headers, the signed
//! bytes, the tolerance, the event id source and its stability across
//! retries, and the provider's redelivery window.

pub mod adyen;
pub mod aftership;
pub mod airtable;
pub mod alchemy;
pub mod box_com;
pub mod clickup;
pub mod contentful;
pub mod discord;
pub mod easypost;
pub mod generic_hmac;
pub mod github;
pub mod gitlab;
pub mod intercom;
pub mod lab;
pub mod lemonsqueezy;
pub mod linear;
pub mod mailgun;
pub mod nylas;
pub mod onfido;
pub mod paddle;
pub mod persona;
pub mod razorpay;
pub mod sanity;
pub mod sendgrid;
pub mod shopify;
pub mod slack;
pub mod square;
pub mod standard;
pub mod stripe;
pub mod trello;
pub mod twilio;
pub mod twitch;
pub mod typeform;
pub mod xero;
pub mod zoom;
